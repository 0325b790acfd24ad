package io.viper.testing.leases;

import io.viper.memory.LeakDetector;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class when a {@link io.viper.ModelLease} was garbage-collected without
 * {@code close()} while it ran, as {@link io.viper.testing.netty.NettyLeakDetection} does for
 * Netty's buffers. Not used by hand: this JAR's
 * {@code META-INF/services/org.junit.jupiter.api.extension.Extension} registers it for every test
 * class of a module that has {@code viper-testing} as a test dependency. The parent pom runs the
 * tests with {@code viper.leakDetection.level=paranoid}, so the failure shows the stack that took
 * the lease. viper-core's own tests (and those using its test jar) have the same check,
 * {@code io.viper.testing.LeaseLeakCheck}; a report fails one class only, whichever finishes first.
 */
public final class LeaseLeakDetection implements AfterAllCallback {
    /** Created by JUnit's extension autodetection. */
    public LeaseLeakDetection() {
    }

    @Override
    public void afterAll(ExtensionContext context) throws InterruptedException {
        LeakDetector.assertNoLeaks(context.getDisplayName());
    }
}
