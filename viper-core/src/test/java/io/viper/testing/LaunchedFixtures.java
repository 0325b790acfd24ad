package io.viper.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * Runs a fixture test class through the JUnit launcher with extension autodetection on, as surefire does, so that a
 * test can see what the registered extensions make of it. Fixtures carry
 * {@code @EnabledIf("io.viper.testing.LaunchedFixtures#launching")}: found on their own (an IDE, {@code -Dtest}), they
 * are disabled. One launch at a time.
 */
public final class LaunchedFixtures {
    private static volatile boolean launching;

    private LaunchedFixtures() {}

    /** Whether {@link #run} is launching a fixture now. */
    public static boolean launching() {
        return launching;
    }

    /** The result of running {@code testClass} alone: the class container's outcome. */
    public static TestExecutionResult run(Class<?> testClass) {
        LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
                .selectors(selectClass(testClass))
                .configurationParameter("junit.jupiter.extensions.autodetection.enabled", "true")
                .build();
        Map<String, TestExecutionResult> results = new ConcurrentHashMap<>();
        launching = true;
        try {
            LauncherFactory.create().execute(request, new TestExecutionListener() {
                @Override
                public void executionFinished(TestIdentifier id, TestExecutionResult result) {
                    id.getSource()
                            .filter(ClassSource.class::isInstance)
                            .ifPresent(s -> results.put(((ClassSource) s).getClassName(), result));
                }
            });
        } finally {
            launching = false;
        }
        TestExecutionResult result = results.get(testClass.getName());
        assertTrue(result != null, "no result for " + testClass.getName() + ": " + results.keySet());
        return result;
    }
}
