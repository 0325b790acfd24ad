package io.viper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.errors.ViperMemoryException;
import io.viper.errors.ViperTimeoutException;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Two models on one {@link Viper} instance share its host memory budget ({@code viper.memory.host.budget.bytes}): each
 * model's own budget would take both, the instance's takes one. The second waits for the first to give its staging
 * back, or is refused naming who holds it.
 */
class SharedMemoryBudgetTest {
    private static final long MIB = 1 << 20;
    private SdkFixture fx;

    @BeforeEach
    void setUp(TestInfo info) {
        fx = new SdkFixture(info.getTestMethod().orElseThrow().getName() + System.nanoTime());
    }

    @AfterEach
    void tearDown() throws Exception {
        fx.close();
    }

    /**
     * An instance of 3 MiB in all, each producer allowed 4 MiB, one staged version kept, waiting {@code waitMs} for
     * staging.
     */
    private Viper viper(long waitMs) {
        return fx.viper(
                new SimpleMeterRegistry(),
                "viper.memory.host.budget.bytes",
                "3m",
                "viper.producer.staging.budget.bytes",
                "4m",
                "viper.producer.staging.versions",
                "1",
                "viper.producer.staging.wait.ms",
                Long.toString(waitMs),
                "viper.producer.inline.bytes",
                "0");
    }

    @Test
    void theSecondModelIsRefusedNamingWhatTheFirstHolds() {
        Viper viper = viper(200);
        List<MemorySegment> twoMib = fx.model(1, 2 * MIB);
        ViperProducer a = fx.keep(viper.producer("a", CheckpointPolicy.every(1)));
        ViperProducer b = fx.keep(viper.producer("b", CheckpointPolicy.every(1)));
        a.publish(SdkFixture.snapshot(twoMib), Map.of()).announced().join();
        long t0 = System.nanoTime();
        ViperMemoryException e =
                assertThrows(ViperMemoryException.class, () -> b.publish(SdkFixture.snapshot(twoMib), Map.of()));
        assertTrue(
                System.nanoTime() - t0 >= TimeUnit.MILLISECONDS.toNanos(200),
                "it waited viper.producer.staging.wait.ms first");
        String m = e.getMessage();
        assertTrue(m.startsWith("producer b asked for 2.0 MiB"), m);
        assertTrue(m.contains("staging for v1, after waiting 200 ms"), m);
        assertTrue(
                m.contains("host memory of this Viper instance (viper.memory.host.budget.bytes = 3.0 MiB (3145728"
                        + " bytes))"),
                m);
        assertTrue(m.contains("held: producer a: 2.0 MiB"), m);
        assertTrue(m.contains("[staged a v1 ("), m);
        assertEquals(2 * MIB, e.requestedBytes(), "the staging buffer for b's data");
    }

    @Test
    void theSecondModelWaitsUntilTheFirstGivesItsStagingBack() throws Exception {
        Viper viper = viper(20_000);
        List<MemorySegment> twoMib = fx.model(2, 2 * MIB);
        ViperProducer a = viper.producer("a", CheckpointPolicy.every(1));
        ViperProducer b = fx.keep(viper.producer("b", CheckpointPolicy.every(1)));
        a.publish(SdkFixture.snapshot(twoMib), Map.of()).announced().join();
        CompletableFuture<PublishHandle> second =
                CompletableFuture.supplyAsync(() -> b.publish(SdkFixture.snapshot(twoMib), Map.of()));
        Thread.sleep(300);
        assertFalse(second.isDone(), "b waits while a holds the instance's budget");
        a.close();
        PublishHandle h = second.get(20, TimeUnit.SECONDS);
        assertEquals(1, h.announced().get(20, TimeUnit.SECONDS).version());
        // Another instance consumes: this one's budget is b's staging now.
        try (ViperConsumer c = fx.viper(new SimpleMeterRegistry()).consumer("b")) {
            c.awaitVersion(1, Duration.ofSeconds(20));
            SdkFixture.assertServes(c, 1, twoMib);
        }
    }

    @Test
    void aSecondConsumerGetsTheRoomTheFirstGivesBack() {
        Viper producers = fx.viper(new SimpleMeterRegistry(), "viper.producer.inline.bytes", "0");
        ViperProducer p = fx.keep(producers.producer("a", CheckpointPolicy.every(1)));
        ViperProducer q = fx.keep(producers.producer("b", CheckpointPolicy.every(1)));
        List<MemorySegment> twoMib = fx.model(3, 2 * MIB);
        p.publish(SdkFixture.snapshot(twoMib), Map.of()).announced().join();
        q.publish(SdkFixture.snapshot(twoMib), Map.of()).announced().join();
        Viper consumers = fx.viper(new SimpleMeterRegistry(), "viper.memory.host.budget.bytes", "3m");
        ViperConsumer a = consumers.consumer("a");
        a.awaitVersion(1, Duration.ofSeconds(20));
        ViperConsumer b = fx.keep(consumers.consumer("b"));
        assertThrows(
                ViperTimeoutException.class,
                () -> b.awaitVersion(1, Duration.ofMillis(500)),
                "a's receive buffer holds 2 of the instance's 3 MiB");
        a.close();
        b.awaitVersion(1, Duration.ofSeconds(20));
        SdkFixture.assertServes(b, 1, twoMib);
    }
}
