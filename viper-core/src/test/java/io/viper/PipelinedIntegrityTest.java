package io.viper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.hash.HashAlgorithm;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import io.viper.testing.InMemoryTransportProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The integrity guarantee under pipelining: the producer hashes a model in pieces while it copies
 * it, the consumer verifies pieces as they land (out of order, over the in-memory transport), and
 * still nothing is swapped in before every byte is verified.
 */
class PipelinedIntegrityTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /** Tensor sizes that straddle the hashing pieces and the transport's pieces: several pieces, an odd tail, a tiny one. */
    private static final long[] SIZES = {9L * (1 << 20) + 3, 100, 5L * (1 << 20)};

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final Arena arena = Arena.ofShared();
    private String name;

    @BeforeEach
    void setUp(TestInfo info) {
        InMemoryTransportProvider.resetFaults();
        name = info.getTestMethod().orElseThrow().getName() + System.nanoTime();
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        arena.close();
    }

    private <T extends AutoCloseable> T keep(T c) {
        closeables.add(c);
        return c;
    }

    private Viper viper(String... config) {
        Viper.Builder b = Viper.builder().notifier("mem://" + name).transports("mem://" + name + "-t").meterRegistry(new SimpleMeterRegistry())
                .config("viper.consumer.retry.backoff.ms", "20");
        for (int i = 0; i < config.length; i += 2) {
            b.config(config[i], config[i + 1]);
        }
        return keep(b.build());
    }

    /** Three tensors of random bytes drawn from {@code seed}. */
    private List<MemorySegment> model(long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<MemorySegment> out = new ArrayList<>();
        for (long size : SIZES) {
            MemorySegment s = arena.allocate(size);
            long i = 0;
            for (; i + 8 <= size; i += 8) {
                s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
            }
            for (; i < size; i++) {
                s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            out.add(s);
        }
        return out;
    }

    private static Snapshot snapshot(List<MemorySegment> tensors) {
        return sink -> {
            for (int i = 0; i < tensors.size(); i++) {
                sink.add("t" + i, DType.U8, new long[] {tensors.get(i).byteSize()}, tensors.get(i));
            }
        };
    }

    private static void assertServes(ViperConsumer consumer, long version, List<MemorySegment> expected) {
        try (ModelLease m = consumer.current()) {
            assertEquals(version, m.version());
            for (int i = 0; i < expected.size(); i++) {
                Tensor t = m.tensor("t" + i);
                assertEquals(-1, expected.get(i).mismatch(t.data()), "tensor t" + i + " of v" + version + " is byte for byte the published one");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(HashAlgorithm.class)
    void modelsHashedAndVerifiedInPiecesArriveIntact(HashAlgorithm algorithm) {
        Viper v = viper("viper.hash.algorithm", algorithm.fieldName());
        ViperProducer producer = keep(v.producer("big", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("big"));
        List<Manifest> manifests = new CopyOnWriteArrayList<>();
        consumer.onManifest(manifests::add);
        for (long version = 1; version <= 3; version++) {
            List<MemorySegment> m = model(version);
            producer.publish(snapshot(m), Map.of());
            assertEquals(version, consumer.awaitVersion(version, WAIT));
            assertServes(consumer, version, m);
        }
        Manifest last = manifests.getLast();
        assertTrue(last.tensors().stream().allMatch(t -> t.hash().algorithm() == algorithm), "every tensor carries " + algorithm);
        String json = new String(ManifestCodec.encode(last), StandardCharsets.UTF_8);
        assertTrue(json.startsWith(algorithm == HashAlgorithm.CRC32C ? "{\"format\":2," : "{\"format\":1,"), json);
    }

    @Test
    void aPieceCorruptedInFlightIsCaughtAndTheOldVersionKeepsServing() throws Exception {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("c", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("c"));
        List<MemorySegment> v1 = model(1);
        producer.publish(snapshot(v1), Map.of());
        consumer.awaitVersion(1, WAIT);
        List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
        consumer.onUpdate(updates::add);

        // One byte in the third transport piece of the first tensor (not the last piece to land) flips in every read.
        InMemoryTransportProvider.Faults faults = InMemoryTransportProvider.faults(name + "-t");
        faults.corruptAt.set(2 * InMemoryTransportProvider.PIECE + 12_345);
        List<MemorySegment> v2 = model(2);
        producer.publish(snapshot(v2), Map.of());
        int readsBefore = faults.reads.get();
        while (faults.reads.get() < readsBefore + 3) {
            Thread.sleep(5); // the consumer tries, fails the check, backs off and tries again
        }
        assertEquals(1, consumer.version(), "a corrupt v2 is never swapped in");
        assertServes(consumer, 1, v1);
        assertTrue(updates.isEmpty(), "no update was reported");

        faults.corruptAt.set(-1); // the link heals: the next retry gets v2 intact
        assertEquals(2, consumer.awaitVersion(2, WAIT));
        assertServes(consumer, 2, v2);
        assertEquals(List.of(2L), updates.stream().map(ModelUpdate::version).toList());
    }

    @Test
    void aProducerThatDiesMidTransferLeavesTheOldVersionServing() throws Exception {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("d", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("d"));
        List<MemorySegment> v1 = model(1);
        producer.publish(snapshot(v1), Map.of());
        consumer.awaitVersion(1, WAIT);

        // Every read of v2 ends after 3 of its 15 pieces landed (and were being verified).
        InMemoryTransportProvider.Faults faults = InMemoryTransportProvider.faults(name + "-t");
        faults.dieAfterPieces.set(3);
        List<MemorySegment> v2 = model(2);
        producer.publish(snapshot(v2), Map.of());
        int readsBefore = faults.reads.get();
        while (faults.reads.get() < readsBefore + 3) {
            Thread.sleep(5);
        }
        assertEquals(1, consumer.version(), "a partly received v2 is never swapped in");
        assertServes(consumer, 1, v1);

        faults.dieAfterPieces.set(-1);
        assertEquals(2, consumer.awaitVersion(2, WAIT));
        assertServes(consumer, 2, v2);
    }

    @Test
    void versionsOnlyMoveForwardWhilePublishedFasterThanTheyLoad() {
        Viper v = viper("viper.producer.staging.versions", "3");
        ViperProducer producer = keep(v.producer("o", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("o"));
        List<Long> served = new CopyOnWriteArrayList<>();
        consumer.onUpdate(u -> served.add(u.version()));
        List<MemorySegment> last = null;
        for (int version = 1; version <= 12; version++) {
            last = model(version);
            producer.publish(snapshot(last), Map.of()); // no wait between publishes
        }
        assertEquals(12, consumer.awaitVersion(12, WAIT));
        assertServes(consumer, 12, last);
        for (int i = 1; i < served.size(); i++) {
            assertTrue(served.get(i) > served.get(i - 1), "versions served in order: " + served);
        }
    }
}
