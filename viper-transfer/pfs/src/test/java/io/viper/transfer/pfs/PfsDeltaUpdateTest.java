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

/** A consumer following a model over the PFS alone reads only the blocks of a new version it does not hold. */
class PfsDeltaUpdateTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long MIB = 1L << 20;

    @TempDir
    Path pfs;

    @Test
    void overTheBlockStoreOnlyTheChangedBlockIsRead() throws Exception {
        try (SdkFixture fx = new SdkFixture("pfs-delta-" + System.nanoTime())) {
            Viper v = fx.keep(Viper.builder()
                    .notifier("mem://pfs-delta-" + System.nanoTime())
                    .transports()
                    .pfsRoot(pfs)
                    .consumerPaths("file")
                    .meterRegistry(new SimpleMeterRegistry())
                    .config("viper.consumer.retry.backoff.ms", "20")
                    .build());
            ViperProducer producer = fx.keep(v.producer("m", CheckpointPolicy.never()));
            ViperConsumer consumer = fx.keep(v.consumer("m"));
            List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
            consumer.onUpdate(updates::add);
            List<MemorySegment> v1 = fx.model(1, 3 * MIB, 5000);
            producer.publish(snapshot(v1), Map.of()).durable().join();
            consumer.awaitVersion(1, WAIT);
            List<MemorySegment> v2 = new ArrayList<>();
            for (MemorySegment s : v1) {
                v2.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
            }
            v2.getFirst()
                    .set(ValueLayout.JAVA_BYTE, MIB + 1, (byte) ~v2.getFirst().get(ValueLayout.JAVA_BYTE, MIB + 1));
            producer.publish(snapshot(v2), Map.of()).durable().join();
            consumer.awaitVersion(2, WAIT);
            assertServes(consumer, 2, v2);
            assertEquals("file", updates.getLast().path());
            assertEquals(MIB, updates.getLast().bytes(), "only the changed block was read from the block store");
            assertEquals(2 * MIB + 5000, updates.getLast().reusedBytes());
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
        long[] sizes = {3 * MIB, 5000};
        long total = 3 * MIB + 5000;
        try (SdkFixture fx = new SdkFixture("pfs-mixed-" + System.nanoTime())) {
            Viper v = fx.keep(Viper.builder()
                    .notifier("mem://pfs-mixed-" + System.nanoTime())
                    .transports()
                    .pfsRoot(pfs)
                    .consumerPaths("file")
                    .meterRegistry(new SimpleMeterRegistry())
                    .config("viper.consumer.retry.backoff.ms", "20")
                    .config("viper.producer.staging.versions", "1")
                    .config("viper.producer.staging.budget.bytes", Long.toString(2 * total))
                    .build());
            ViperProducer producer = fx.keep(v.producer("m", CheckpointPolicy.never()));
            ViperConsumer consumer = fx.keep(v.consumer("m"));
            List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
            consumer.onUpdate(updates::add);
            List<List<MemorySegment>> versions = new ArrayList<>();
            versions.add(fx.model(1, sizes));
            versions.add(versions.getFirst());
            versions.add(fx.model(3, sizes)); // every byte new: shares nothing with v1, whose buffer it takes
            for (long at : new long[] {7, 2 * MIB + 3, 9}) {
                List<MemorySegment> next = new ArrayList<>();
                for (MemorySegment s : versions.getLast()) {
                    next.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
                }
                next.getFirst()
                        .set(ValueLayout.JAVA_BYTE, at, (byte) ~next.getFirst().get(ValueLayout.JAVA_BYTE, at));
                versions.add(next);
            }
            List<Boolean> asFile = new ArrayList<>();
            for (int i = 0; i < versions.size(); i++) {
                int version = i + 1;
                producer.publish(snapshot(versions.get(i)), Map.of()).durable().join();
                asFile.add(Files.exists(pfs.resolve("m/" + version + "/model.safetensors")));
                consumer.awaitVersion(version, WAIT);
                assertServes(consumer, version, versions.get(i));
            }
            // v3 into v1's buffer and v4 into v2's share nothing with what those held; v5 and v6 share.
            assertEquals(
                    List.of(false, false, true, true, false, false),
                    asFile,
                    "kept as a file rather than as blocks, per version");
            assertEquals(MIB, updates.getLast().bytes(), "v6 read only its changed block from the block store");
            for (int gone = 1; gone <= 3; gone++) {
                assertFalse(Files.exists(pfs.resolve("m/" + gone)), "retention (3) deleted v" + gone);
            }
        }
    }
}
