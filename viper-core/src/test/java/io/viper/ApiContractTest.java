package io.viper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.testing.InMemoryTransportProvider;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The public API's promises as a library user meets them: listeners that fail, calls after close, arguments that are
 * null or wrong. Over the in-memory notifier and transport.
 */
class ApiContractTest {
    private static final Duration WAIT = Duration.ofSeconds(20);
    private SdkFixture f;
    private List<MemorySegment> model;

    @BeforeEach
    void setUp(TestInfo info) {
        f = new SdkFixture(info.getTestMethod().orElseThrow().getName() + System.nanoTime());
        model = f.model(1, 1000, 2000);
    }

    @AfterEach
    void tearDown() throws Exception {
        f.close();
    }

    @Test
    void anUpdateListenerThatThrowsAnErrorDoesNotStopTheUpdates() {
        Viper v = f.viper(new SimpleMeterRegistry());
        ViperProducer producer = f.keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer consumer = f.keep(v.consumer("m"));
        List<Long> heard = new CopyOnWriteArrayList<>();
        consumer.onUpdate(u -> {
            throw new AssertionError("a listener's bug");
        });
        consumer.onUpdate(u -> heard.add(u.version()));
        producer.publish(SdkFixture.snapshot(model), Map.of());
        assertEquals(1, consumer.awaitVersion(1, WAIT), "the wait ends although a listener failed");
        producer.publish(SdkFixture.snapshot(f.model(2, 1000, 2000)), Map.of());
        assertEquals(2, consumer.awaitVersion(2, WAIT), "the next version still arrives");
        assertEquals(List.of(1L, 2L), heard, "the other listener hears every update");
    }

    @Test
    void aClosedConsumerSaysItIsClosedRatherThanThatNoModelArrivedYet() {
        Viper v = f.viper(new SimpleMeterRegistry());
        ViperProducer producer = f.keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer consumer = v.consumer("m");
        producer.publish(SdkFixture.snapshot(model), Map.of());
        consumer.awaitVersion(1, WAIT);
        consumer.close();
        assertThrows(ViperClosedException.class, consumer::current);
        assertThrows(ViperClosedException.class, consumer::currentIfAny);
        assertThrows(ViperClosedException.class, () -> consumer.fetch(1, Set.of("t0")));
        consumer.close(); // idempotent
    }

    @Test
    void fetchedTensorsCloseMoreThanOnce() {
        Viper v = f.viper(new SimpleMeterRegistry());
        ViperProducer producer = f.keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer consumer = f.keep(v.consumer("m"));
        producer.publish(SdkFixture.snapshot(model), Map.of());
        consumer.awaitVersion(1, WAIT);
        try (TensorSet set = consumer.fetch(1, Set.of("t1"))) {
            assertEquals(-1, model.get(1).mismatch(set.tensor("t1").data()));
            set.close(); // and again by try-with-resources
            assertThrows(
                    IllegalStateException.class,
                    () -> set.tensor("t1").data().get(ValueLayout.JAVA_BYTE, 0),
                    "its memory is freed");
        }
    }

    @Test
    void metadataThatCannotBePublishedIsRefusedBeforeAVersionIsUsed() {
        Viper v = f.viper(new SimpleMeterRegistry());
        ViperProducer producer = f.keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer consumer = f.keep(v.consumer("m"));
        Map<String, String> nullValue = new HashMap<>();
        nullValue.put("note", null);
        NullPointerException npe =
                assertThrows(NullPointerException.class, () -> producer.publish(SdkFixture.snapshot(model), null));
        assertEquals("metadata", npe.getMessage());
        ViperConfigException e =
                assertThrows(ViperConfigException.class, () -> producer.publish(SdkFixture.snapshot(model), nullValue));
        assertTrue(e.getMessage().contains("key note"), e.getMessage());
        assertEquals(
                "snapshot",
                assertThrows(NullPointerException.class, () -> producer.publish((Snapshot) null, Map.of()))
                        .getMessage());
        assertEquals(0, producer.latestVersion(), "no version was used");
        assertEquals(1, producer.publish(SdkFixture.snapshot(model), Map.of()).version());
        assertEquals(1, consumer.awaitVersion(1, WAIT));
        SdkFixture.assertServes(consumer, 1, model);
    }

    @Test
    void nullArgumentsAreRefusedAtTheBoundaryNamingWhat() {
        assertTrue(
                assertThrows(ViperConfigException.class, () -> Viper.builder().notifier((URI) null))
                        .getMessage()
                        .contains("viper.notifier"));
        assertTrue(assertThrows(
                        ViperConfigException.class, () -> Viper.builder().transports((String[]) null))
                .getMessage()
                .contains("viper.transports"));
        assertTrue(assertThrows(
                        ViperConfigException.class, () -> Viper.builder().consumerPaths((String[]) null))
                .getMessage()
                .contains("viper.consumer.paths"));
        assertTrue(assertThrows(ViperConfigException.class, () -> CheckpointPolicy.atIterations((long[]) null))
                .getMessage()
                .contains("iterations must not be null"));
        Viper v = f.viper(new SimpleMeterRegistry());
        ViperConsumer consumer = f.keep(v.consumer("m"));
        assertEquals(
                "timeout",
                assertThrows(NullPointerException.class, () -> consumer.awaitVersion(1, null))
                        .getMessage());
        assertEquals(
                "names",
                assertThrows(NullPointerException.class, () -> consumer.fetch(1, null))
                        .getMessage());
    }

    @Test
    void aFetchThreadEndedByAnErrorTellsTheWaitersInsteadOfLeavingThemWaiting() throws InterruptedException {
        Viper v = f.viper(new SimpleMeterRegistry(), "viper.consumer.inline", "false");
        ViperProducer producer = f.keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer consumer = f.keep(v.consumer("m"));
        List<ViperException> failures = new CopyOnWriteArrayList<>();
        consumer.onFailure(failures::add);
        InMemoryTransportProvider.faults(f.transport()).errorReads.set(1);
        producer.publish(SdkFixture.snapshot(model), Map.of());
        ViperException e = assertThrows(ViperException.class, () -> consumer.awaitVersion(1, WAIT));
        assertEquals(ViperException.Reason.INTERNAL, e.reason());
        assertTrue(e.getMessage().contains("the fetch thread failed: java.lang.UnsatisfiedLinkError"), e.getMessage());
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (failures.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(5); // the listeners hear it just after the waiters are woken
        }
        assertEquals(1, failures.size(), "the failure listener heard it");
    }
}
