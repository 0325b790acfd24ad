package io.viper.testing;

import io.viper.memory.LeakDetector;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class when a {@link io.viper.ModelLease} was garbage-collected without {@code close()} while it ran
 * ({@link LeakDetector}), as {@link io.viper.testing.netty.NettyLeakDetection} does for Netty's buffers. Registered for
 * every test class of viper-core and of the modules that use its test jar by this jar's
 * {@code META-INF/services/org.junit.jupiter.api.extension.Extension}. The parent pom runs the tests with
 * {@code viper.leakDetection.level=paranoid}, so the failure shows where the lease was taken. Each report fails one
 * class: the first to finish after it.
 */
public final class LeaseLeakCheck implements AfterAllCallback {
    /** Created by JUnit's extension autodetection. */
    public LeaseLeakCheck() {}

    @Override
    public void afterAll(ExtensionContext context) throws InterruptedException {
        LeakDetector.assertNoLeaks(context.getDisplayName());
    }
}
