package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.errors.ViperConfigException;
import io.viper.internal.ViperMetrics;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** What a wait for a version does once the consumer stopped following the model. */
class ServingModelTest {
    @Test
    void aWaitForAVersionThrowsTheFailureThatStoppedTheConsumer() {
        try (ServingModel serving = new ServingModel("m", new ViperMetrics(new SimpleMeterRegistry()))) {
            serving.stop(new ViperConfigException(
                    "notifier embedded://h:1: embedded://h:1 refused this client: authentication failed"));
            ViperConfigException e =
                    assertThrows(ViperConfigException.class, () -> serving.awaitVersion(1, Duration.ofHours(1)));
            assertEquals(
                    "consumer m: v1 will not arrive (serving v0): notifier embedded://h:1: embedded://h:1 refused"
                            + " this client: "
                            + "authentication failed",
                    e.getMessage());
            assertTrue(e.getCause() instanceof ViperConfigException);
            assertEquals(0, serving.awaitVersion(0, Duration.ofHours(1)), "a version already served is no wait");
        }
    }
}
