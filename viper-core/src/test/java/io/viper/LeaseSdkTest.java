package io.viper;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.spi.ReadLease;
import io.viper.testing.InMemoryTransportProvider;
import io.viper.testing.LogCapture;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Leases over the in-memory test doubles: what a lease keeps readable, and what its close lets go. */
class LeaseSdkTest extends SdkTestBase {
    @Test
    void aRetiredVersionIsWithdrawnOnlyAfterItsLastReadLeaseCloses() throws Exception {
        Viper v = keep(Viper.builder()
                .notifier("mem://" + name)
                .transports("mem://" + name + "-a")
                .config("viper.producer.staging.versions", "1")
                .build());
        ViperProducer producer = keep(v.producer("w", CheckpointPolicy.never()));
        producer.publish(snapshot(1f), Map.of()).announced().get();
        ReadLease reading = InMemoryTransportProvider.lease(name + "-a", "w", 1);
        assertNotNull(reading, "a consumer reads v1");
        producer.publish(snapshot(2f), Map.of()).announced().get();
        producer.publish(snapshot(3f), Map.of()).announced().get();
        producer.flush();
        assertNull(InMemoryTransportProvider.lease(name + "-a", "w", 1), "a retired version takes no new lease");
        Thread.sleep(200);
        assertFalse(
                InMemoryTransportProvider.withdrawn(name + "-a").contains("w/1"),
                "not withdrawn while a read holds its lease");
        assertTrue(
                InMemoryTransportProvider.withdrawn(name + "-a").contains("w/2"),
                "a retired version without leases is withdrawn");
        reading.close();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!InMemoryTransportProvider.withdrawn(name + "-a").contains("w/1") && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(
                InMemoryTransportProvider.withdrawn(name + "-a").contains("w/1"),
                "withdrawn once the last lease closed");
    }

    @Test
    void leasesKeepTheirModelIntactWhileNewerVersionsArrive() throws Exception {
        Viper v = Viper.builder()
                .notifier("mem://" + name)
                .transports("mem://" + name + "-a")
                .meterRegistry(registry)
                .config("viper.consumer.buffer.wait.ms", "30000")
                .build();
        keep(v);
        ViperProducer producer = keep(v.producer("l", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("l"));
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        ModelLease held = consumer.current();
        producer.publish(snapshot(2f), Map.of());
        consumer.awaitVersion(2, WAIT);
        // v3 must go into v1's buffer, which the open lease still holds: it waits.
        producer.publish(snapshot(3f), Map.of());
        Thread.sleep(500);
        assertEquals(2, consumer.version(), "v3 waits for the lease on v1's buffer");
        assertArrayEquals(
                new float[] {1f, -1f}, held.tensor("dense.bias").toFloatArray(), "the held model is untouched");
        held.close();
        assertEquals(3, consumer.awaitVersion(3, WAIT));
        try (ModelLease m = consumer.current()) {
            assertArrayEquals(new float[] {3f, -3f}, m.tensor("dense.bias").toFloatArray());
        }
        assertThrows(IllegalStateException.class, () -> held.tensor("dense.bias"), "a closed lease refuses access");
    }

    @Test
    void closingAConsumerNamesTheVersionsStillLeasedAndKeepsThemReadable() throws Exception {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("cl", CheckpointPolicy.never()));
        ViperConsumer consumer = v.consumer("cl");
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        ModelLease held = consumer.current();
        try (LogCapture log = new LogCapture("io.viper.internal")) {
            consumer.close();
            assertTrue(
                    log.lines().stream()
                            .anyMatch(l -> l.contains("consumer cl closed while v1 is still leased (1 open lease)")),
                    log.lines().toString());
        }
        assertArrayEquals(
                new float[] {1f, -1f}, held.tensor("dense.bias").toFloatArray(), "a lease outlives the consumer");
        io.viper.tensor.Tensor bias = held.tensor("dense.bias");
        held.close();
        assertThrows(IllegalStateException.class, () -> bias.getDouble(0), "the buffer is freed with the last lease");
    }

    @Test
    void staleTensorViewsFailAfterTheirVersionIsReleased() {
        Viper v = viper();
        ViperProducer producer = keep(v.producer("s", CheckpointPolicy.never()));
        ViperConsumer consumer = keep(v.consumer("s"));
        producer.publish(snapshot(1f), Map.of());
        consumer.awaitVersion(1, WAIT);
        io.viper.tensor.Tensor stale;
        try (ModelLease m = consumer.current()) {
            stale = m.tensor("dense.bias");
        }
        producer.publish(snapshot(2f), Map.of());
        consumer.awaitVersion(2, WAIT);
        assertThrows(
                IllegalStateException.class, () -> stale.getDouble(0), "memory of a released version is not readable");
    }
}
