package io.viper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * What an operator's dashboard reads (issue 38, item 7): per model gauges of the version served, the versions behind
 * and the time since the last swap; latency, transfer and verify time as histograms (buckets, so that p99 works after a
 * summary's window); failure counters at 0 from the start; a description (Prometheus' HELP) on every meter.
 */
class OperatorMetricsTest {
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

    private static double gauge(SimpleMeterRegistry r, String name) {
        return r.get(name).tag("model", "m").gauge().value();
    }

    @Test
    void consumerGaugesAndFailureCountersAreThereFromTheStart() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        Viper v = f.viper(r);
        ViperConsumer consumer = v.consumer("m");
        assertEquals(0, gauge(r, "viper.consumer.version"));
        assertEquals(0, gauge(r, "viper.consumer.versions.behind"));
        assertTrue(Double.isNaN(gauge(r, "viper.consumer.swap.age")), "no swap yet");
        assertEquals(
                0, r.get("viper.consumer.failures").tag("model", "m").counter().count());
        assertEquals(
                0,
                r.get("viper.consumer.load.failures")
                        .tag("model", "m")
                        .counter()
                        .count());
        ViperProducer producer = f.keep(v.producer("m", CheckpointPolicy.never()));
        assertEquals(
                0, r.get("viper.producer.published").tag("model", "m").counter().count(), "0 before a version");
        producer.publish(SdkFixture.snapshot(model), Map.of());
        consumer.awaitVersion(1, WAIT);
        producer.publish(SdkFixture.snapshot(f.model(2, 1000, 2000)), Map.of());
        consumer.awaitVersion(2, WAIT);
        assertEquals(2, gauge(r, "viper.consumer.version"));
        assertEquals(0, gauge(r, "viper.consumer.versions.behind"));
        double age = gauge(r, "viper.consumer.swap.age");
        assertTrue(age >= 0 && age < 60, "seconds since the swap: " + age);
        consumer.close();
        assertNull(r.find("viper.consumer.version").gauge(), "a closed consumer's gauges are removed");
        ViperConsumer again = f.keep(v.consumer("m"));
        again.awaitVersion(2, WAIT);
        assertEquals(2, gauge(r, "viper.consumer.version"), "a consumer opened later registers its own");
    }

    private static void awaitBehind(SimpleMeterRegistry r, double n) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (gauge(r, "viper.consumer.versions.behind") < n && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
    }

    @Test
    void versionsBehindCountsAnnouncementsNotVersionNumbers() throws InterruptedException {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        Viper v = f.viper(r, "viper.consumer.autoload", "false");
        ViperConsumer consumer = f.keep(v.consumer("m"));
        ViperProducer producer = f.keep(v.producer("m", CheckpointPolicy.never()));
        producer.publish(SdkFixture.snapshot(model), Map.of());
        awaitBehind(r, 1);
        producer.publish(SdkFixture.snapshot(f.model(2, 1000, 2000)), Map.of());
        awaitBehind(r, 2);
        assertEquals(2, gauge(r, "viper.consumer.versions.behind"), "two announced, none loaded");
        assertEquals(0, gauge(r, "viper.consumer.version"));
        assertTrue(consumer.currentIfAny().isEmpty());
    }

    @Test
    void updateTimesAreHistogramsWithBucketsAndEveryMeterHasHelp() {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        Viper v = f.viper(r);
        ViperProducer producer = f.keep(v.producer("m", CheckpointPolicy.never()));
        ViperConsumer consumer = f.keep(v.consumer("m"));
        producer.publish(SdkFixture.snapshot(model), Map.of());
        consumer.awaitVersion(1, WAIT);
        for (String name : List.of("viper.update.latency", "viper.update.transfer", "viper.update.verify")) {
            Timer t = r.find(name).tag("model", "m").timer();
            assertNotNull(t, name);
            assertEquals(1, t.count(), name);
            assertEquals(21, t.takeSnapshot().histogramCounts().length, name + " publishes histogram buckets");
        }
        Timer stall = r.get("viper.producer.stall").timer();
        assertEquals(21, stall.takeSnapshot().histogramCounts().length, "the stall too");
        List<Meter> meters = r.getMeters();
        assertFalse(meters.isEmpty());
        for (Meter m : meters) {
            if (m.getId().syntheticAssociation() != null) {
                continue; // the simple registry's bucket gauges of a timer; Prometheus writes buckets in the timer's
            }
            String help = m.getId().getDescription();
            assertTrue(help != null && !help.isBlank(), m.getId().getName() + " has a description");
        }
        Counter published = r.get("viper.producer.published").counter();
        assertEquals(1, published.count());
    }
}
