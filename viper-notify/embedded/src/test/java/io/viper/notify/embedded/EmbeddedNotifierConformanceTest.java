package io.viper.notify.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.viper.spi.NotifierProvider;
import io.viper.testing.NotifierConformanceSuite;
import java.net.URI;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The embedded notifier passes the notifier conformance suite against a standalone broker (both roles connect to it);
 * core's test jar fails the class if Netty reports a leak.
 */
class EmbeddedNotifierConformanceTest extends NotifierConformanceSuite {
    private static EmbeddedBroker broker;

    @BeforeAll
    static void startBroker() {
        broker = EmbeddedBroker.start("127.0.0.1", 0);
    }

    @AfterAll
    static void stopBroker() {
        broker.close();
    }

    @Override
    protected NotifierProvider provider() {
        return new EmbeddedNotifierProvider();
    }

    @Override
    protected URI uri() {
        return broker.uri();
    }

    /** Sends a PUBLISH whose manifest bytes are {@code raw}; the broker must refuse it with an ERROR. */
    @Override
    protected void injectRaw(String model, byte[] raw) throws Exception {
        try (RawClient c = new RawClient(broker.uri())) {
            c.send(RawClient.frame(0x04, RawClient.publishPayload(77, model, raw)));
            byte[] answer = c.readFrame();
            assertEquals(0x14, answer[0], "the broker answers ERROR");
        }
    }
}
