package io.viper;

import static io.viper.testing.SdkFixture.assertServes;
import static io.viper.testing.SdkFixture.snapshot;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.testing.InMemoryTransportProvider;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Delta updates through the SDK (in-memory transport): a consumer holding a version pulls only the blocks of the next
 * one it does not hold, copies the rest from the version it serves, and still checks every tensor of the assembled
 * version before the swap; a bad block is refetched.
 */
class DeltaUpdateTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long MIB = 1L << 20;
    /** t0: 5 blocks of 1 MiB (the last 3 bytes), t1: one short block, t2: 2 blocks. */
    private static final long[] SIZES = {4 * MIB + 3, 100, 2 * MIB};

    private static final long TOTAL = 6 * MIB + 103;
    /** A byte in block 3 of t0, which holds the middle of the data section. */
    private static final long CHANGED = 3 * MIB + 10;

    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
    private final List<Manifest> manifests = new CopyOnWriteArrayList<>();
    private SdkFixture fx;
    private ViperConsumer consumer;
    private List<MemorySegment> v1;
    private List<MemorySegment> v2;

    @BeforeEach
    void setUp(TestInfo info) {
        fx = new SdkFixture(info.getTestMethod().orElseThrow().getName() + System.nanoTime());
    }

    @AfterEach
    void tearDown() throws Exception {
        fx.close();
    }

    /**
     * Publishes v1 (random) and, once the consumer serves it and {@code meanwhile} ran, v2: v1 with one byte of t0
     * changed, at {@link #CHANGED}; returns when the consumer serves v2.
     */
    private void publishTwoVersions(Consumer<ViperConsumer> meanwhile, String... config) {
        Viper v = fx.viper(registry, config);
        ViperProducer producer = fx.keep(v.producer("m", CheckpointPolicy.never()));
        consumer = fx.keep(v.consumer("m"));
        consumer.onUpdate(updates::add);
        consumer.onManifest(manifests::add);
        v1 = fx.model(1, SIZES);
        producer.publish(snapshot(v1), Map.of());
        consumer.awaitVersion(1, WAIT);
        meanwhile.accept(consumer);
        v2 = new ArrayList<>();
        for (MemorySegment s : v1) {
            v2.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
        }
        flip(v2.getFirst(), CHANGED);
        producer.publish(snapshot(v2), Map.of());
        consumer.awaitVersion(2, WAIT);
        assertServes(consumer, 2, v2);
    }

    private static void flip(MemorySegment s, long at) {
        s.set(ValueLayout.JAVA_BYTE, at, (byte) ~s.get(ValueLayout.JAVA_BYTE, at));
    }

    private double counter(String meter) {
        var c = registry.find(meter).tag("model", "m").counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void aConsumerHoldingAVersionPullsOnlyTheChangedBlock() {
        publishTwoVersions(c -> {});
        assertEquals(TOTAL, updates.get(0).bytes(), "v1 had no base: a full pull");
        assertEquals(0, updates.get(0).reusedBytes());
        assertEquals(MIB, updates.get(1).bytes(), "v2 moved only the changed block");
        assertEquals(TOTAL - MIB, updates.get(1).reusedBytes(), "and copied every other block from v1");
        assertEquals(TOTAL + MIB, counter("viper.transfer.bytes"));
        assertEquals(TOTAL - MIB, counter("viper.transfer.reused.bytes"));

        Manifest m1 = manifests.getFirst();
        Manifest m2 = manifests.getLast();
        assertEquals(MIB, m2.blockBytes());
        assertEquals(5, m2.tensor("t0").blocks().ids().size());
        assertTrue(
                new String(ManifestCodec.encode(m2), StandardCharsets.UTF_8).startsWith("{\"format\":3,"),
                "blocks make a format 3 manifest");
        for (int j = 0; j < 5; j++) {
            assertEquals(
                    j != 3,
                    m1.tensor("t0")
                            .blocks()
                            .ids()
                            .get(j)
                            .equals(m2.tensor("t0").blocks().ids().get(j)),
                    "only block 3 of t0 has another id");
        }
    }

    /**
     * With one version kept and room for two buffers, v3 is staged into v1's buffer: the producer copies and hashes
     * only the two blocks that differ from v1, and the consumer still verifies v3.
     */
    @Test
    void theProducerCopiesAndHashesOnlyTheBlocksThatDifferFromTheBufferItRecycles() {
        Viper v = fx.viper(
                registry,
                "viper.producer.staging.versions",
                "1",
                "viper.producer.staging.budget.bytes",
                Long.toString(2 * TOTAL));
        ViperProducer producer = fx.keep(v.producer("m", CheckpointPolicy.never()));
        consumer = fx.keep(v.consumer("m"));
        v1 = fx.model(1, SIZES);
        List<MemorySegment> v3 = new ArrayList<>();
        for (MemorySegment s : v1) {
            v3.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
        }
        flip(v3.get(0), CHANGED);
        PublishHandle first = producer.publish(snapshot(v1), Map.of());
        PublishHandle second = producer.publish(snapshot(v1), Map.of());
        consumer.awaitVersion(2, WAIT);
        flip(v3.get(2), MIB + 7); // block 1 of t2
        PublishHandle third = producer.publish(snapshot(v3), Map.of());
        consumer.awaitVersion(3, WAIT);
        assertServes(consumer, 3, v3);

        assertEquals(TOTAL, first.copiedBytes());
        assertEquals(TOTAL, second.copiedBytes(), "v2 had a new buffer: nothing to compare with");
        assertEquals(2 * MIB, third.copiedBytes(), "v3 differs from v1 in block 3 of t0 and block 1 of t2");
        assertEquals(TOTAL - 2 * MIB, third.unchangedBytes());
        assertEquals(
                (double) (3 * TOTAL - third.unchangedBytes()),
                registry.find("viper.producer.copied.bytes")
                        .tag("model", "m")
                        .counter()
                        .count());
        assertEquals(
                TOTAL - 2 * MIB,
                registry.find("viper.producer.unchanged.bytes")
                        .tag("model", "m")
                        .counter()
                        .count());
    }

    /**
     * viper.producer.block.skip.unshared: a version that shares nothing with the version in the buffer it is staged
     * into goes without block ids and is pulled whole; once versions share blocks again they carry ids, and the
     * consumer pulls only what changed.
     */
    @Test
    void aVersionThatSharesNothingGoesWithoutBlockIdsAndDeltasResumeAfterIt() {
        Viper v = fx.viper(
                registry,
                "viper.producer.staging.versions",
                "1",
                "viper.producer.staging.budget.bytes",
                Long.toString(2 * TOTAL));
        ViperProducer producer = fx.keep(v.producer("m", CheckpointPolicy.never()));
        consumer = fx.keep(v.consumer("m"));
        consumer.onUpdate(updates::add);
        consumer.onManifest(manifests::add);
        v1 = fx.model(1, SIZES);
        List<List<MemorySegment>> versions = new ArrayList<>();
        versions.add(v1);
        versions.add(v1);
        versions.add(fx.model(3, SIZES)); // v3: every byte new
        for (long at : new long[] {5, 2 * MIB + 1, CHANGED}) { // v4, v5, v6: one byte each
            List<MemorySegment> next = new ArrayList<>();
            for (MemorySegment s : versions.getLast()) {
                next.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
            }
            flip(next.getFirst(), at);
            versions.add(next);
        }
        List<PublishHandle> handles = new ArrayList<>();
        for (int i = 0; i < versions.size(); i++) {
            handles.add(producer.publish(snapshot(versions.get(i)), Map.of()));
            consumer.awaitVersion(i + 1, WAIT);
            assertServes(consumer, i + 1, versions.get(i));
        }
        // v3 went into v1's buffer and v4 into v2's: neither shares a block with what it replaced there.
        for (int version : new int[] {3, 4}) {
            Manifest m = manifests.get(version - 1);
            assertEquals(0, m.blockBytes(), "v" + version + " carries no block ids");
            assertTrue(
                    new String(ManifestCodec.encode(m), StandardCharsets.UTF_8).startsWith("{\"format\":2,"),
                    "v" + version + ": a format 2 manifest");
            assertEquals(TOTAL, handles.get(version - 1).copiedBytes());
            assertEquals(TOTAL, updates.get(version - 1).bytes(), "v" + version + " is pulled whole");
        }
        // v5 went into v3's buffer, which has no ids: it shares blocks, so all of its ids are hashed.
        assertEquals(5, manifests.get(4).tensor("t0").blocks().ids().size(), "v5 carries block ids again");
        assertEquals(TOTAL, updates.get(4).bytes(), "v5: the consumer's v4 has no ids to copy by");
        assertEquals(MIB, updates.get(5).bytes(), "v6 moved only its changed block");
        assertEquals(TOTAL - MIB, updates.get(5).reusedBytes());
    }

    @Test
    void withoutBlocksEveryUpdateIsAFullPull() {
        publishTwoVersions(c -> {}, "viper.block.bytes", "0");
        assertEquals(TOTAL, updates.getLast().bytes());
        assertEquals(0, updates.getLast().reusedBytes());
    }

    @Test
    void aBlockCorruptedInFlightIsDetectedAndTheVersionRefetched() {
        // The next read flips the byte in the middle of the data section: inside the one block v2 pulls.
        publishTwoVersions(c ->
                InMemoryTransportProvider.faults(fx.transport()).corruptReads.set(1));
        assertEquals(
                MIB + TOTAL,
                updates.getLast().bytes(),
                "the corrupt block was caught and the whole version pulled again");
        assertEquals(0, updates.getLast().reusedBytes());
    }

    @Test
    void aCorruptBlockInTheBaseIsNeverServedTheVersionIsPulledWhole() {
        publishTwoVersions(c -> {
            try (ModelLease held = c.current()) {
                // Memory gone bad under the consumer, in a block v2 shares with v1 (copied, not pulled).
                flip(MemorySegment.ofAddress(held.tensor("t2").data().address()).reinterpret(SIZES[2]), 5);
            }
        });
        assertEquals(
                MIB + TOTAL,
                updates.getLast().bytes(),
                "the assembled version failed its tensor hashes and was pulled whole");
    }

    @Test
    void fetchOfNamedTensorsCopiesTheBlocksTheServingVersionHas() {
        publishTwoVersions(c -> {});
        double movedBefore = counter("viper.transfer.bytes");
        double reusedBefore = counter("viper.transfer.reused.bytes");
        try (TensorSet old = consumer.fetch(1, Set.of("t0", "t1"))) {
            assertEquals(-1, v1.get(0).mismatch(old.tensor("t0").data()));
            assertEquals(-1, v1.get(1).mismatch(old.tensor("t1").data()));
        }
        assertEquals(
                MIB,
                counter("viper.transfer.bytes") - movedBefore,
                "v1's t0 differs from the serving v2's in one block");
        assertEquals((double) (SIZES[0] - MIB + SIZES[1]), counter("viper.transfer.reused.bytes") - reusedBefore);
    }

    @Test
    void fetchOfNamedTensorsCatchesABadBlockCopiedFromTheServingVersionAndPullsThemWhole() {
        publishTwoVersions(c -> {});
        try (ModelLease held = consumer.current()) {
            // Memory gone bad under the consumer, in t1, which v1 and the serving v2 share (copied, not pulled).
            flip(MemorySegment.ofAddress(held.tensor("t1").data().address()).reinterpret(SIZES[1]), 7);
        }
        double movedBefore = counter("viper.transfer.bytes");
        double reusedBefore = counter("viper.transfer.reused.bytes");
        try (TensorSet old = consumer.fetch(1, Set.of("t0", "t1"))) {
            assertEquals(-1, v1.get(0).mismatch(old.tensor("t0").data()));
            assertEquals(-1, v1.get(1).mismatch(old.tensor("t1").data()), "the bad copy was caught and t1 pulled");
        }
        assertEquals(
                (double) (MIB + SIZES[0] + SIZES[1]),
                counter("viper.transfer.bytes") - movedBefore,
                "the changed block, then both tensors whole");
        assertEquals(0, counter("viper.transfer.reused.bytes") - reusedBefore);
    }
}
