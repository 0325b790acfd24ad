package io.viper.notify.embedded;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider.Role;
import io.viper.testing.LogCapture;
import io.viper.testing.Ports;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The connection to the broker: hostile raw clients, broker restarts, a broker not up yet, a port held by a stranger,
 * bad URIs and use after close.
 */
class EmbeddedConnectionTest extends EmbeddedNotifierTestBase {
    @Test
    void garbageAndOversizedFramesCloseOnlyThatConnection() throws Exception {
        EmbeddedBroker broker = own(EmbeddedBroker.start("127.0.0.1", 0));
        try (LogCapture log = new LogCapture(BROKER_LOGGER)) {
            Notifier producer = own(provider.open(broker.uri(), Role.PRODUCER, FAST));
            Notifier consumer = own(provider.open(broker.uri(), Role.CONSUMER, FAST));
            Collector c = new Collector();
            own(consumer.subscribe("robust", c));
            producer.publish(manifest("robust", 1, "tcp://127.0.0.1:1"));
            assertEquals(1, c.next().version());

            byte[] garbage = new byte[2048];
            new Random(3).nextBytes(garbage);
            garbage[0] = 0;
            garbage[1] = 0;
            garbage[2] = 0;
            garbage[3] = 20;
            try (RawClient raw = new RawClient(broker.uri())) {
                raw.send(garbage);
                assertTrue(raw.closedByPeer(), "the broker closed the garbage connection");
            }
            try (RawClient raw = new RawClient(broker.uri())) {
                // A length prefix past the 32 MiB limit.
                raw.send(new byte[] {0x02, 0x10, 0, 0, 1, 4, 0, 0});
                assertTrue(raw.closedByPeer(), "the broker closed the oversized connection");
            }
            try (RawClient raw = new RawClient(broker.uri())) {
                raw.send(new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff});
                assertTrue(raw.closedByPeer(), "the broker closed the negative-length connection");
            }
            try (RawClient raw = new RawClient(broker.uri())) {
                raw.send(RawClient.frame(0x02, RawClient.modelPayload("../../etc/passwd")));
                byte[] err = raw.readFrame();
                assertEquals(0x14, err[0], "ERROR before closing");
                assertTrue(raw.closedByPeer());
            }
            try (RawClient raw = new RawClient(broker.uri())) {
                byte[] f = RawClient.frame(0x01, new byte[0]);
                f[4] = 7; // protocol version 7
                raw.send(f);
                raw.readFrame();
                assertTrue(raw.closedByPeer());
            }
            assertTrue(log.await("malformed frame"), "logged: " + log.lines());
            assertTrue(log.await("unsupported protocol version 7"), "logged: " + log.lines());
            assertTrue(log.await("invalid model name '../../etc/passwd'"), "logged: " + log.lines());

            // A PUBLISH whose manifest names another model is refused, the connection kept.
            try (RawClient raw = new RawClient(broker.uri())) {
                raw.send(RawClient.frame(
                        0x04,
                        RawClient.publishPayload(
                                5, "robust", ManifestCodec.encode(manifest("other", 9, "tcp://h:1")))));
                byte[] err = raw.readFrame();
                assertEquals(0x14, err[0]);
                raw.send(RawClient.frame(0x01, new byte[0]));
                assertEquals(0x11, raw.readFrame()[0], "the connection still answers HELLO");
            }

            producer.publish(manifest("robust", 2, "tcp://127.0.0.1:1"));
            assertEquals(2, c.next().version(), "delivery goes on for everyone else");
            assertNull(c.manifests.poll(200, TimeUnit.MILLISECONDS));
        }
    }

    @Test
    void consumerResubscribesAfterTheBrokerRestarts() throws Exception {
        EmbeddedBroker first = EmbeddedBroker.start("127.0.0.1", 0);
        int port = first.port();
        URI uri = first.uri();
        Notifier producer = own(provider.open(uri, Role.PRODUCER, FAST));
        Notifier consumer = own(provider.open(uri, Role.CONSUMER, FAST));
        Collector c = new Collector();
        own(consumer.subscribe("restart", c));
        producer.publish(manifest("restart", 1, "tcp://127.0.0.1:1"));
        assertEquals(1, c.next().version());

        first.close();
        assertTrue(c.problem().contains("lost the broker"), "the listener heard of the loss");
        assertThrows(
                RetriableViperException.class,
                () -> producer.publish(manifest("restart", 2, "tcp://127.0.0.1:1")),
                "publish without a broker fails retriably");

        EmbeddedBroker second = own(EmbeddedBroker.start("127.0.0.1", port));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                producer.publish(manifest("restart", 3, "tcp://127.0.0.1:1"));
                break;
            } catch (RetriableViperException e) {
                assertTrue(System.nanoTime() < deadline, "the producer reconnected within 10 s: " + e.getMessage());
                Thread.sleep(50);
            }
        }
        Manifest m = c.next();
        // The producer re-published v2 (its newest) on reconnecting, then v3; the consumer may see either first.
        while (m.version() < 3) {
            m = c.next();
        }
        assertEquals(3, m.version());
        assertNull(c.manifests.poll(200, TimeUnit.MILLISECONDS), "no duplicates");
        assertEquals(port, second.port());
    }

    @Test
    void restartedBrokerRegainsTheLatestFromTheProducer() throws Exception {
        EmbeddedBroker first = EmbeddedBroker.start("127.0.0.1", 0);
        int port = first.port();
        Notifier producer = own(provider.open(first.uri(), Role.PRODUCER, FAST));
        producer.publish(manifest("regain", 4, "tcp://127.0.0.1:1"));
        first.close();
        own(EmbeddedBroker.start("127.0.0.1", port));
        // A late consumer of the new broker finds v4 once the producer reconnected and re-published it.
        Notifier late = own(provider.open(first.uri(), Role.CONSUMER, FAST));
        Collector c = new Collector();
        own(late.subscribe("regain", c));
        assertEquals(4, c.next().version());
    }

    @Test
    void consumerWaitsForABrokerThatIsNotUpYet() throws Exception {
        int port = Ports.free();
        URI uri = URI.create("embedded://127.0.0.1:" + port);
        Notifier consumer = own(provider.open(uri, Role.CONSUMER, FAST));
        Collector c = new Collector();
        own(consumer.subscribe("early", c));
        assertTrue(c.problem().contains("unreachable"), "the listener is told the broker is unreachable");
        RetriableViperException e =
                assertThrows(RetriableViperException.class, () -> consumer.publish(manifest("early", 1, "tcp://h:1")));
        assertTrue(e.getMessage().contains(uri.toString()), e.getMessage());
        own(EmbeddedBroker.start("127.0.0.1", port));
        Notifier producer = own(provider.open(uri, Role.PRODUCER, FAST));
        producer.publish(manifest("early", 1, "tcp://127.0.0.1:1"));
        assertEquals(1, c.next().version());
    }

    @Test
    void producerRefusesAPortHeldByAStranger() throws Exception {
        try (ServerSocket stranger = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread acceptor = Thread.ofVirtual().start(() -> {
                // Holds the accepted sockets: a stranger that keeps every connection open.
                @SuppressWarnings("ModifiedButNotUsed")
                List<Socket> held = new ArrayList<>();
                try {
                    while (true) {
                        held.add(stranger.accept());
                    }
                } catch (IOException ignored) {
                    // Closed by the test.
                }
            });
            long t0 = System.nanoTime();
            RetriableViperException e = assertThrows(
                    RetriableViperException.class,
                    () -> provider.open(
                            URI.create("embedded://127.0.0.1:" + stranger.getLocalPort()),
                            Role.PRODUCER,
                            ViperConfig.of(Map.of("viper.notify.timeout.ms", "500"))));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 3000, "gave up after " + ms + " ms");
            assertTrue(e.getMessage().contains("no embedded broker answers"), e.getMessage());
            acceptor.interrupt();
        }
    }

    @Test
    void badUrisAndUseAfterCloseFailClearly() {
        assertThrows(
                ViperException.class, () -> provider.open(URI.create("embedded://127.0.0.1:0"), Role.CONSUMER, FAST));
        assertThrows(
                ViperException.class, () -> provider.open(URI.create("kafka://127.0.0.1:9092"), Role.CONSUMER, FAST));
        assertThrows(
                ViperException.class, () -> provider.open(URI.create("embedded://127.0.0.1:1/x"), Role.CONSUMER, FAST));
        assertThrows(
                ViperException.class,
                () -> provider.open(
                        URI.create("embedded://127.0.0.1:0"),
                        Role.PRODUCER,
                        ViperConfig.of(Map.of("viper.notify.timeout.ms", "-1"))));
        Notifier n = provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST);
        assertThrows(ViperException.class, () -> n.subscribe("bad/name", m -> {}));
        n.close();
        n.close();
        ViperException e = assertThrows(ViperException.class, () -> n.publish(manifest("x", 1, "tcp://h:1")));
        assertEquals(ViperException.Reason.CLOSED, e.reason());
        assertFalse(e.isRetriable());
        ViperException inUse = assertThrows(ViperException.class, () -> {
            try (EmbeddedBroker a = EmbeddedBroker.start("127.0.0.1", 0)) {
                EmbeddedBroker.start("127.0.0.1", a.port()).close();
            }
        });
        assertEquals(ViperException.Reason.UNAVAILABLE, inUse.reason());
    }
}
