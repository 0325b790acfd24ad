package io.viper.transfer.pfs;

import static io.viper.testing.SdkFixture.assertServes;
import static io.viper.testing.SdkFixture.snapshot;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.CheckpointPolicy;
import io.viper.ModelUpdate;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A consumer following a model over the PFS alone: a version kept as blocks on page boundaries is mapped in place (the
 * block files' own pages; nothing read into a buffer of its own); one whose blocks mostly start mid-page (a small
 * tensor first) is read into a receive buffer, and then only the blocks the consumer does not hold are read.
 */
class PfsDeltaUpdateTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long MIB = 1L << 20;

    @TempDir
    Path pfs;

    /** A producer and a consumer of model {@code m} over the PFS alone, and the consumer's p.updates(). */
    private record Pair(ViperProducer producer, ViperConsumer consumer, List<ModelUpdate> updates) {}

    private Pair overThePfs(SdkFixture fx, String name, Map<String, String> config) {
        Viper.Builder b = Viper.builder()
                .notifier("mem://" + name + "-" + System.nanoTime())
                .transports()
                .pfsRoot(pfs)
                .consumerPaths("file")
                .meterRegistry(new SimpleMeterRegistry())
                .config("viper.consumer.retry.backoff.ms", "20");
        config.forEach(b::config);
        Viper v = fx.keep(b.build());
        ViperProducer producer = fx.keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer consumer = fx.keep(v.consumer("m"));
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        consumer.onUpdate(updates::add);
        return new Pair(producer, consumer, updates);
    }

    /** A copy of {@code v} with the byte at {@code at} of tensor {@code tensor} inverted. */
    private static List<MemorySegment> changed(SdkFixture fx, List<MemorySegment> v, int tensor, long at) {
        List<MemorySegment> next = new ArrayList<>();
        for (MemorySegment s : v) {
            next.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
        }
        next.get(tensor).set(ValueLayout.JAVA_BYTE, at, (byte) ~next.get(tensor).get(ValueLayout.JAVA_BYTE, at));
        return next;
    }

    @Test
    void overTheBlockStoreOnlyTheChangedBlockIsRead() throws Exception {
        try (SdkFixture fx = new SdkFixture("pfs-delta-" + System.nanoTime())) {
            Pair p = overThePfs(fx, "pfs-delta", Map.of());
            // 5000 bytes first: every block of the large tensor starts mid-page, so the version cannot be mapped
            List<MemorySegment> v1 = fx.model(1, 5000, 3 * MIB);
            p.producer().publish(snapshot(v1), Map.of()).durable().join();
            p.consumer().awaitVersion(1, WAIT);
            List<MemorySegment> v2 = new ArrayList<>();
            for (MemorySegment s : v1) {
                v2.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
            }
            v2.getLast()
                    .set(ValueLayout.JAVA_BYTE, MIB + 1, (byte) ~v2.getLast().get(ValueLayout.JAVA_BYTE, MIB + 1));
            p.producer().publish(snapshot(v2), Map.of()).durable().join();
            p.consumer().awaitVersion(2, WAIT);
            assertServes(p.consumer(), 2, v2);
            assertEquals("file", p.updates().getLast().path());
            assertEquals(MIB, p.updates().getLast().bytes(), "only the changed block was read from the block store");
            assertEquals(2 * MIB + 5000, p.updates().getLast().reusedBytes());
            assertFalse(Files.exists(pfs.resolve("m/2/model.safetensors")), "the version is kept as blocks");
        }
    }
    /**
     * Versions that share nothing with the one their staging buffer held go without block ids
     * (viper.producer.block.skip.unshared) and are kept as safetensors files, the others as blocks; retention deletes
     * both kinds, the block sweep keeps what retained versions name, and the consumer serves every version byte for
     * byte.
     */
    @Test
    void versionsWithAndWithoutBlockIdsShareOneRepository() throws Exception {
        long[] sizes = {5000, 3 * MIB};
        long total = 3 * MIB + 5000;
        try (SdkFixture fx = new SdkFixture("pfs-mixed-" + System.nanoTime())) {
            Pair p = overThePfs(
                    fx,
                    "pfs-mixed",
                    Map.of(
                            "viper.producer.staging.versions",
                            "1",
                            "viper.producer.staging.budget.bytes",
                            Long.toString(2 * total)));
            List<List<MemorySegment>> versions = new ArrayList<>();
            versions.add(fx.model(1, sizes));
            versions.add(versions.getFirst());
            versions.add(fx.model(3, sizes)); // every byte new: shares nothing with v1, whose buffer it takes
            for (long at : new long[] {7, 2 * MIB + 3, 9}) {
                List<MemorySegment> next = new ArrayList<>();
                for (MemorySegment s : versions.getLast()) {
                    next.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
                }
                next.getLast()
                        .set(ValueLayout.JAVA_BYTE, at, (byte) ~next.getLast().get(ValueLayout.JAVA_BYTE, at));
                versions.add(next);
            }
            List<Boolean> asFile = new ArrayList<>();
            for (int i = 0; i < versions.size(); i++) {
                int version = i + 1;
                p.producer()
                        .publish(snapshot(versions.get(i)), Map.of())
                        .durable()
                        .join();
                asFile.add(Files.exists(pfs.resolve("m/" + version + "/model.safetensors")));
                p.consumer().awaitVersion(version, WAIT);
                assertServes(p.consumer(), version, versions.get(i));
            }
            // v3 into v1's buffer and v4 into v2's share nothing with what those held; v5 and v6 share.
            assertEquals(
                    List.of(false, false, true, true, false, false),
                    asFile,
                    "kept as a file rather than as blocks, per version");
            assertEquals(MIB, p.updates().getLast().bytes(), "v6 read only its changed block from the block store");
            // retention runs after the announcement (and after durable), on the producer's thread: wait for it
            long deadline = System.nanoTime() + WAIT.toNanos();
            for (int gone = 1; gone <= 3; gone++) {
                while (Files.exists(pfs.resolve("m/" + gone)) && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertFalse(Files.exists(pfs.resolve("m/" + gone)), "retention (3) deleted v" + gone);
            }
        }
    }

    /**
     * Blocks on page boundaries (the large tensor first): each version is mapped in place, the second too, since the
     * serving one is a mapping of the same block files; every version serves byte for byte.
     */
    @Test
    void blocksOnPageBoundariesAreMappedInPlace() throws Exception {
        try (SdkFixture fx = new SdkFixture("pfs-mapped-" + System.nanoTime())) {
            Pair p = overThePfs(fx, "pfs-mapped", Map.of());
            List<MemorySegment> v1 = fx.model(1, 3 * MIB, 5000);
            p.producer().publish(snapshot(v1), Map.of()).durable().join();
            p.consumer().awaitVersion(1, WAIT);
            List<MemorySegment> v2 = changed(fx, v1, 0, MIB + 1);
            p.producer().publish(snapshot(v2), Map.of()).durable().join();
            p.consumer().awaitVersion(2, WAIT);
            assertServes(p.consumer(), 2, v2);
            assertFalse(Files.exists(pfs.resolve("m/2/model.safetensors")), "the version is kept as blocks");
            assertEquals(2, p.updates().size());
            ModelUpdate first = p.updates().getFirst();
            ModelUpdate second = p.updates().getLast();
            assertEquals("file", first.path());
            assertEquals(3 * MIB + 5000, first.bytes(), "v1 mapped cold: all of it read from the PFS");
            assertEquals(3 * MIB + 5000, first.bytesFromPfs());
            assertEquals("file", second.path());
            assertEquals(MIB, second.bytes(), "v2 shares all but one block with the mapping of v1");
            assertEquals(2 * MIB + 5000, second.reusedBytes());
        }
    }
}
