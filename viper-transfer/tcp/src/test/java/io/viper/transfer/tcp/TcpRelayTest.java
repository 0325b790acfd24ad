package io.viper.transfer.tcp;

import static io.viper.testing.SdkFixture.assertServes;
import static io.viper.testing.SdkFixture.snapshot;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.CheckpointPolicy;
import io.viper.ModelUpdate;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.testing.SdkFixture;
import io.viper.testing.TestSecrets;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A small fleet on loopback, in one process: a producer and consumers that relay over tcp://, each in a Viper instance
 * of its own. The producer's tracker sends each reader to one source: the producer sends one model per version however
 * many consumers follow, every consumer serves the published bytes, a late joiner reads from a relay, and a delta moves
 * only its changed block from whichever source holds it.
 */
class TcpRelayTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long MIB = 1L << 20;
    private static final long[] SIZES = {3 * MIB + 5, 2 * MIB};
    private static final long TOTAL = 5 * MIB + 5;

    private SdkFixture fx;
    private String notifier;
    private ViperProducer producer;
    private final List<ViperConsumer> consumers = new ArrayList<>();
    private final List<List<ModelUpdate>> updates = new ArrayList<>();

    /** The credentials every consumer uses: none, or a consumer token. */
    private Map<String, String> consumerAuth = Map.of();

    @TempDir
    Path tmp;

    @BeforeEach
    void setUp() {
        fx = new SdkFixture("tcp-relay-" + System.nanoTime());
        notifier = "mem://tcp-relay-" + System.nanoTime();
    }

    private void startProducer(Map<String, String> auth) {
        Viper p = fx.keep(Viper.builder()
                .notifier(notifier)
                .transports("tcp://127.0.0.1:0")
                .meterRegistry(new SimpleMeterRegistry())
                .config("viper.producer.block.skip.unshared", "false")
                .config(auth)
                .build());
        producer = fx.keep(p.producer("m", CheckpointPolicy.never()));
    }

    @AfterEach
    void tearDown() throws Exception {
        fx.close();
    }

    private ViperConsumer join() {
        Viper v = fx.keep(Viper.builder()
                .notifier(notifier)
                .transports("tcp://127.0.0.1:0")
                .consumerPaths("tcp")
                .meterRegistry(new SimpleMeterRegistry())
                .config("viper.consumer.relay.transports", "tcp://127.0.0.1:0")
                .config("viper.consumer.retry.backoff.ms", "20")
                .config(consumerAuth)
                .build());
        ViperConsumer c = fx.keep(v.consumer("m"));
        List<ModelUpdate> mine = new CopyOnWriteArrayList<>();
        c.onUpdate(mine::add);
        consumers.add(c);
        updates.add(mine);
        return c;
    }

    /** The update of consumer {@code i} to {@code version}. */
    private ModelUpdate update(int i, long version) {
        return updates.get(i).stream()
                .filter(u -> u.version() == version)
                .findFirst()
                .orElseThrow();
    }

    private void publishAndAwait(long version, List<MemorySegment> tensors) {
        producer.publish(snapshot(tensors), Map.of());
        for (ViperConsumer c : consumers) {
            c.awaitVersion(version, WAIT);
            assertServes(c, version, tensors);
        }
    }

    @Test
    void theProducerSendsOneModelAndTheRelaysTheRest() {
        startProducer(Map.of());
        for (int i = 0; i < 4; i++) {
            join();
        }
        List<MemorySegment> v1 = fx.model(1, SIZES);
        publishAndAwait(1, v1);
        long fromProducer = 0;
        long fromRelays = 0;
        for (int i = 0; i < consumers.size(); i++) {
            ModelUpdate u = update(i, 1);
            assertEquals(TOTAL, u.bytes());
            fromProducer += u.bytesFromProducer();
            fromRelays += u.bytesFromRelays();
        }
        assertEquals(TOTAL, fromProducer, "the producer sent the model once");
        assertEquals(3 * TOTAL, fromRelays, "the three other consumers read it from relays");
    }

    @Test
    void aLateJoinerReadsFromARelay() {
        startProducer(Map.of());
        join();
        join();
        List<MemorySegment> v1 = fx.model(2, SIZES);
        publishAndAwait(1, v1);
        ViperConsumer late = join();
        late.awaitVersion(1, WAIT);
        assertServes(late, 1, v1);
        ModelUpdate u = update(2, 1);
        assertEquals(TOTAL, u.bytesFromRelays(), "the late joiner read v1 from a relay: " + u);
        assertEquals(0, u.bytesFromProducer());
    }

    /** With a secret: consumers holding only the consumer token relay to each other (and still could not publish). */
    @Test
    void consumersHoldingOnlyTheConsumerTokenRelay() throws Exception {
        TestSecrets secrets = TestSecrets.make(tmp);
        startProducer(secrets.producerSetting());
        consumerAuth = secrets.consumerSetting();
        for (int i = 0; i < 3; i++) {
            join();
        }
        List<MemorySegment> v1 = fx.model(4, SIZES);
        publishAndAwait(1, v1);
        long fromRelays = 0;
        for (int i = 0; i < consumers.size(); i++) {
            fromRelays += update(i, 1).bytesFromRelays();
        }
        assertEquals(2 * TOTAL, fromRelays, "two of the three read from relays, over authenticated connections");
    }

    @Test
    void aDeltaMovesOnlyTheChangedBlockThroughTheRelays() {
        startProducer(Map.of());
        for (int i = 0; i < 3; i++) {
            join();
        }
        List<MemorySegment> v1 = fx.model(3, SIZES);
        publishAndAwait(1, v1);
        List<MemorySegment> v2 = new ArrayList<>();
        for (MemorySegment s : v1) {
            v2.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
        }
        v2.get(0).set(ValueLayout.JAVA_BYTE, MIB + 10, (byte) ~v2.get(0).get(ValueLayout.JAVA_BYTE, MIB + 10));
        publishAndAwait(2, v2);
        long fromProducer = 0;
        for (int i = 0; i < consumers.size(); i++) {
            ModelUpdate u = update(i, 2);
            assertEquals(MIB, u.bytes(), "only block 1 of t0 moved: " + u);
            fromProducer += u.bytesFromProducer();
        }
        assertTrue(fromProducer <= MIB, "the producer sent the changed block once: " + fromProducer);
    }
}
