package io.viper.testing.leases;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.memory.LeakDetector;
import io.viper.testing.LaunchedFixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;
import org.junit.platform.engine.TestExecutionResult;

/**
 * Runs small test classes through the JUnit launcher with extension autodetection on, as surefire does: a class that
 * drops a tracked lease unclosed fails naming it, a tidy one passes. (viper-core's LeaseLeakTest shows that a real
 * {@code ModelLease} is tracked.)
 */
class LeaseLeakDetectionTest {
    /** Stands for a lease: tracked as one, and dropped or closed. */
    private static final class FakeLease {
        private final LeakDetector.Tracker tracker = LeakDetector.track(this, "ModelLease on fixture v7");
    }

    /** Drops a tracked lease without closing it. Run only through {@link LaunchedFixtures#run}. */
    @EnabledIf("io.viper.testing.LaunchedFixtures#launching")
    static class LeakingTests {
        @Test
        void dropsALeaseUnclosed() {
            new FakeLease();
        }
    }

    /** Closes what it tracks. Run only through {@link LaunchedFixtures#run}. */
    @EnabledIf("io.viper.testing.LaunchedFixtures#launching")
    static class TidyTests {
        @Test
        void closesItsLease() {
            FakeLease lease = new FakeLease();
            lease.tracker.close();
        }
    }

    /** {@link LaunchedFixtures#run} at the paranoid level, as the parent pom sets it for tests. */
    private static TestExecutionResult run(Class<?> fixture) {
        LeakDetector.Level before = LeakDetector.level();
        LeakDetector.setLevel(LeakDetector.Level.PARANOID);
        try {
            return LaunchedFixtures.run(fixture);
        } finally {
            LeakDetector.setLevel(before);
        }
    }

    @Test
    void aClassThatLeaksALeaseFails() {
        TestExecutionResult result = run(LeakingTests.class);
        assertEquals(TestExecutionResult.Status.FAILED, result.getStatus());
        AssertionError failure =
                assertInstanceOf(AssertionError.class, result.getThrowable().orElseThrow());
        assertTrue(
                failure.getMessage().startsWith("1 leak(s) while LeaseLeakDetectionTest$LeakingTests ran"),
                failure.getMessage());
        assertTrue(
                failure.getMessage().contains("LEAK: ModelLease on fixture v7 was garbage-collected without close()"),
                failure.getMessage());
        assertTrue(
                failure.getMessage().contains("dropsALeaseUnclosed"),
                "the report shows where: " + failure.getMessage());
    }

    @Test
    void aClassThatClosesItsLeasesPasses() {
        TestExecutionResult tidy = run(TidyTests.class);
        assertEquals(
                TestExecutionResult.Status.SUCCESSFUL,
                tidy.getStatus(),
                () -> String.valueOf(tidy.getThrowable().orElse(null)));
    }
}
