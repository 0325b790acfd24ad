package io.viper.transfer.tcp;

import static io.viper.testing.SdkFixture.assertServes;
import static io.viper.testing.SdkFixture.snapshot;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.CheckpointPolicy;
import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.ViperProducer;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A consumer following a model over tcp:// through several versions, each a block away from the last: every update
 * moves only the changed block, whatever it assembles from the receive buffer's older version (left in place), the
 * serving version (copied) and the producer (pulled), and every version served is byte for byte the published one; a
 * block gone bad in the free receive buffer is caught by the tensor hashes and the version pulled whole.
 */
class TcpDeltaUpdateTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final long MIB = 1L << 20;
    /** t0: 4 blocks of 1 MiB (the last 5 bytes), t1: 2 blocks. */
    private static final long[] SIZES = {3 * MIB + 5, 2 * MIB};

    private static final long TOTAL = 5 * MIB + 5;

    private final List<ModelUpdate> updates = new CopyOnWriteArrayList<>();
    private SdkFixture fx;
    private ViperProducer producer;
    private ViperConsumer consumer;

    @BeforeEach
    void setUp() {
        fx = new SdkFixture("tcp-delta-" + System.nanoTime());
        Viper v = fx.keep(Viper.builder()
                .notifier("mem://tcp-delta-" + System.nanoTime())
                .transports("tcp://127.0.0.1:0")
                .consumerPaths("tcp")
                .meterRegistry(new SimpleMeterRegistry())
                .config("viper.consumer.retry.backoff.ms", "20")
                .build());
        producer = fx.keep(v.producer("m", CheckpointPolicy.never()));
        consumer = fx.keep(v.consumer("m"));
        consumer.onUpdate(updates::add);
    }

    @AfterEach
    void tearDown() throws Exception {
        fx.close();
    }

    /** Publishes {@code tensors} as the next version and returns the consumer's update to it, once it serves it. */
    private ModelUpdate publish(long version, List<MemorySegment> tensors) {
        producer.publish(snapshot(tensors), Map.of());
        consumer.awaitVersion(version, WAIT);
        assertServes(consumer, version, tensors);
        ModelUpdate u = updates.getLast();
        assertEquals(version, u.version());
        assertEquals("tcp", u.path());
        return u;
    }

    /** A copy of {@code v} with one byte of tensor {@code t} changed at {@code at}. */
    private List<MemorySegment> changed(List<MemorySegment> v, int t, long at) {
        List<MemorySegment> out = new ArrayList<>();
        for (MemorySegment s : v) {
            out.add(fx.arena().allocate(s.byteSize()).copyFrom(s));
        }
        flip(out.get(t), at);
        return out;
    }

    private static void flip(MemorySegment s, long at) {
        s.set(ValueLayout.JAVA_BYTE, at, (byte) ~s.get(ValueLayout.JAVA_BYTE, at));
    }

    @Test
    void eachVersionMovesOnlyItsChangedBlock() {
        List<MemorySegment> v1 = fx.model(1, SIZES);
        ModelUpdate u1 = publish(1, v1);
        assertEquals(TOTAL, u1.bytes(), "v1: nothing held, a full pull");
        assertEquals(0, u1.reusedBytes());

        List<MemorySegment> v2 = changed(v1, 0, MIB + 10);
        ModelUpdate u2 = publish(2, v2);
        assertEquals(MIB, u2.bytes(), "v2: block 1 of t0; the rest copied from v1");
        assertEquals(TOTAL - MIB, u2.reusedBytes());

        // v3 lands in the buffer that held v1: block 1 of t0 comes from v2, block 0 of t1 from the producer.
        List<MemorySegment> v3 = changed(v2, 1, 7);
        ModelUpdate u3 = publish(3, v3);
        assertEquals(MIB, u3.bytes());
        assertEquals(TOTAL - MIB, u3.reusedBytes());

        // v4 lands in the buffer that held v2: block 0 of t1 comes from v3, block 2 of t0 from the producer.
        List<MemorySegment> v4 = changed(v3, 0, 2 * MIB + 1);
        ModelUpdate u4 = publish(4, v4);
        assertEquals(MIB, u4.bytes());
        assertEquals(TOTAL - MIB, u4.reusedBytes());

        // The last, short block of t0.
        List<MemorySegment> v5 = changed(v4, 0, 3 * MIB + 2);
        ModelUpdate u5 = publish(5, v5);
        assertEquals(5, u5.bytes());
        assertEquals(TOTAL - 5, u5.reusedBytes());
    }

    @Test
    void aBlockScribbledInTheFreeReceiveBufferIsCaughtAndTheVersionPulledWhole() {
        List<MemorySegment> v1 = fx.model(2, SIZES);
        publish(1, v1);
        List<MemorySegment> v2 = changed(v1, 1, MIB + 3);
        try (ModelLease held = consumer.current()) {
            assertEquals(1, held.version());
            publish(2, v2);
            // Memory gone bad under the consumer after v1 was verified, in block 0 of t0, which no
            // version changes: once the lease is closed, v1's buffer is the free one that v3 lands in.
            flip(MemorySegment.ofAddress(held.tensor("t0").data().address()).reinterpret(SIZES[0]), 100);
        }
        List<MemorySegment> v3 = changed(v2, 0, 2 * MIB + 9);
        ModelUpdate u3 = publish(3, v3);
        assertEquals(
                MIB + TOTAL,
                u3.bytes(),
                "the block left in place failed the tensor hash: the whole version was pulled again");
        assertEquals(0, u3.reusedBytes());

        List<MemorySegment> v4 = changed(v3, 1, 5);
        ModelUpdate u4 = publish(4, v4);
        assertEquals(MIB, u4.bytes(), "the next update reuses again");
        assertEquals(TOTAL - MIB, u4.reusedBytes());
    }
}
