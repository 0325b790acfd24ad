package io.viper;

import static io.viper.testing.SdkFixture.assertServes;
import static io.viper.testing.SdkFixture.snapshot;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.hash.HashAlgorithm;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.testing.InMemoryTransportProvider;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The integrity guarantee under pipelining: the producer hashes a model in pieces while it copies it, the consumer
 * verifies pieces as they land (out of order, over the in-memory transport), and still nothing is swapped in before
 * every byte is verified.
 */
class PipelinedIntegrityTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    /**
     * Tensor sizes that straddle the hashing pieces and the transport's pieces: several pieces, an odd tail, a tiny
     * one.
     */
    private static final long[] SIZES = {9L * (1 << 20) + 3, 100, 5L * (1 << 20)};

    private SdkFixture fx;

    @BeforeEach
    void setUp(TestInfo info) {
        fx = new SdkFixture(info.getTestMethod().orElseThrow().getName() + System.nanoTime());
    }

    @AfterEach
    void tearDown() throws Exception {
        fx.close();
    }

    private <T extends AutoCloseable> T keep(T c) {
        return fx.keep(c);
    }

    private Viper viper(String... config) {
        return fx.viper(new SimpleMeterRegistry(), config);
    }

    private List<MemorySegment> model(long seed) {
        return fx.model(seed, SIZES);
    }

    @ParameterizedTest
    @EnumSource(HashAlgorithm.class)
    void modelsHashedAndVerifiedInPiecesArriveIntact(HashAlgorithm algorithm) {
        // Without blocks the manifest keeps the format of its hash (1 or 2), which older consumers read.
        Viper v = viper("viper.hash.algorithm", algorithm.fieldName(), "viper.block.bytes", "0");
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
        assertTrue(
                last.tensors().stream().allMatch(t -> t.hash().algorithm() == algorithm),
                "every tensor carries " + algorithm);
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
        InMemoryTransportProvider.Faults faults = InMemoryTransportProvider.faults(fx.transport());
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
        InMemoryTransportProvider.Faults faults = InMemoryTransportProvider.faults(fx.transport());
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
