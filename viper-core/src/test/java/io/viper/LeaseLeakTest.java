package io.viper;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.memory.LeakDetector;
import io.viper.testing.SdkFixture;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The {@link LeakDetector} names a {@link ModelLease} garbage-collected while open, with the stack that took it at the
 * paranoid level, and says nothing of leases that were closed. The test takes the reports it provokes, so the
 * after-class leak check sees none of them.
 */
class LeaseLeakTest {
    private SdkFixture fx;
    private String model;
    private LeakDetector.Level before;

    @BeforeEach
    void setUp(TestInfo info) throws Exception {
        before = LeakDetector.level();
        LeakDetector.collectLeaks(); // whatever earlier classes left is theirs
        fx = new SdkFixture(info.getTestMethod().orElseThrow().getName() + System.nanoTime());
        model = "leak-" + Long.toHexString(System.nanoTime());
    }

    @AfterEach
    void tearDown() throws Exception {
        LeakDetector.setLevel(before);
        fx.close();
    }

    private ViperConsumer serving() {
        Viper viper = fx.viper(new SimpleMeterRegistry());
        ViperProducer p = fx.keep(viper.producer(model, CheckpointPolicy.every(1)));
        List<MemorySegment> tensors = fx.model(7, 4096);
        p.publish(SdkFixture.snapshot(tensors), Map.of()).announced().join();
        ViperConsumer c = fx.keep(viper.consumer(model));
        c.awaitVersion(1, Duration.ofSeconds(20));
        return c;
    }

    /** Takes a lease and drops it unclosed. */
    private static long takeAndDrop(ViperConsumer c) {
        return c.current().version();
    }

    /** Collects garbage until a report names {@code text}, at most 50 rounds. */
    private static List<String> reportsNaming(String text) throws InterruptedException {
        List<String> reports = new ArrayList<>();
        for (int round = 0; round < 50 && reports.stream().noneMatch(r -> r.contains(text)); round++) {
            reports.addAll(LeakDetector.collectLeaks());
        }
        return reports;
    }

    @Test
    void aLeaseGarbageCollectedWhileOpenIsNamedWithWhereItWasTaken() throws Exception {
        LeakDetector.setLevel(LeakDetector.Level.PARANOID);
        ViperConsumer c = serving();
        assertEquals(1, takeAndDrop(c));
        List<String> reports = reportsNaming("ModelLease on " + model + " v1");
        String report = reports.stream()
                .filter(r -> r.contains(model))
                .findFirst()
                .orElseThrow(
                        () -> new AssertionError("no leak report for " + model + " after 50 collections: " + reports));
        assertTrue(
                report.startsWith("LEAK: ModelLease on " + model + " v1 was garbage-collected without close()"),
                report);
        assertTrue(report.contains("Acquired at:"), report);
        assertTrue(
                report.contains("LeaseLeakTest.takeAndDrop"),
                "the stack names the code that took the lease: " + report);
        assertEquals(1, c.version(), "nothing was released: the consumer still serves");
    }

    @Test
    void atTheSimpleLevelTheReportSaysHowToSeeTheStack() throws Exception {
        LeakDetector.setLevel(LeakDetector.Level.SIMPLE);
        ViperConsumer c = serving();
        takeAndDrop(c);
        List<String> reports = reportsNaming(model);
        assertTrue(
                reports.stream()
                        .anyMatch(r -> r.contains(model)
                                && r.contains("-Dviper.leakDetection.level=paranoid")
                                && !r.contains("Acquired at:")),
                reports.toString());
    }

    @Test
    void closedLeasesAreNotReportedNorAnyWhenDisabled() throws Exception {
        LeakDetector.setLevel(LeakDetector.Level.PARANOID);
        ViperConsumer c = serving();
        for (int i = 0; i < 100; i++) {
            try (ModelLease l = c.current()) {
                assertEquals(1, l.version());
            }
        }
        LeakDetector.setLevel(LeakDetector.Level.DISABLED);
        takeAndDrop(c);
        List<String> reports = new ArrayList<>();
        for (int round = 0; round < 5; round++) {
            reports.addAll(LeakDetector.collectLeaks());
        }
        assertEquals(List.of(), reports.stream().filter(r -> r.contains(model)).toList());
    }
}
