package io.viper.notify.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.hash.ContentHash;
import io.viper.errors.ViperConfigException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider.Role;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import io.viper.testing.LogCapture;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Behaviour beyond the conformance suite: hostile raw clients, broker restarts, producer-hosted
 * brokers, stale publications and a missing broker.
 */
class EmbeddedNotifierBehaviourTest {
    private static final String BROKER_LOGGER = "io.viper.notify.embedded.internal.Broker";
    private static final ViperConfig FAST = ViperConfig.of(Map.of("viper.notify.timeout.ms", "10000"));

    private final EmbeddedNotifierProvider provider = new EmbeddedNotifierProvider();
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    private <T extends AutoCloseable> T own(T c) {
        closeables.add(c);
        return c;
    }

    private static Manifest manifest(String model, long version, String location) {
        var meta = new LinkedHashMap<String, String>();
        meta.put("viper.iteration", Long.toString(version));
        return new Manifest(model, version, "behaviour", Manifest.nowMicros(), meta,
                List.of(new TensorEntry(new TensorInfo("w", DType.F32, new long[] {4}, 0, 16), new ContentHash(version, 1))),
                List.of(new Location(URI.create(location), Tier.HOST)));
    }

    /** Collects manifests and problems of one subscription. */
    private static class Collector implements Notifier.ManifestListener {
        final BlockingQueue<Manifest> manifests = new LinkedBlockingQueue<>();
        final BlockingQueue<String> problems = new LinkedBlockingQueue<>();

        @Override
        public void onManifest(Manifest manifest) {
            manifests.add(manifest);
        }

        @Override
        public void onProblem(String problem) {
            problems.add(problem);
        }

        Manifest next() throws InterruptedException {
            Manifest m = manifests.poll(10, TimeUnit.SECONDS);
            assertNotNull(m, "no manifest within 10 s");
            return m;
        }

        String problem() throws InterruptedException {
            String p = problems.poll(10, TimeUnit.SECONDS);
            assertNotNull(p, "no problem reported within 10 s");
            return p;
        }
    }

    @Test
    void quickListenersAreCalledOnTheEventLoopInOrderAndOthersOnTheDispatcher() throws Exception {
        EmbeddedBroker broker = own(EmbeddedBroker.start("127.0.0.1", 0));
        Notifier producer = own(provider.open(broker.uri(), Role.PRODUCER, FAST));
        producer.publish(manifest("quick", 1, "tcp://127.0.0.1:1"));
        Notifier consumer = own(provider.open(broker.uri(), Role.CONSUMER, FAST));
        List<String> threads = new CopyOnWriteArrayList<>();
        Collector quick = new Collector() {
            @Override
            public void onManifest(Manifest manifest) {
                threads.add(Thread.currentThread().getName());
                super.onManifest(manifest);
            }

            @Override
            public boolean quick() {
                return true;
            }
        };
        Collector slow = new Collector();
        own(consumer.subscribe("quick", slow));
        assertEquals(1, slow.next().version());
        own(consumer.subscribe("quick", quick));
        // The replay of v1 to a second subscriber first. Waiting for it matters: the subscription is
        // registered on the event loop, and a manifest that reaches the loop before that task runs
        // would rightly be this subscriber's replay instead of v1.
        assertEquals(1, quick.next().version(), "the replay of the latest version");
        for (long v = 2; v <= 6; v++) {
            producer.publish(manifest("quick", v, "tcp://127.0.0.1:1"));
        }
        for (long v = 2; v <= 6; v++) {
            assertEquals(v, quick.next().version(), "in publication order");
        }
        for (long v = 2; v <= 6; v++) {
            assertEquals(v, slow.next().version());
        }
        assertTrue(threads.stream().allMatch(t -> t.startsWith("viper-notify-client-")), "called on the event loop: " + threads);
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

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
                raw.send(RawClient.frame(0x04, RawClient.publishPayload(5, "robust", ManifestCodec.encode(manifest("other", 9, "tcp://h:1")))));
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
        assertThrows(RetriableViperException.class, () -> producer.publish(manifest("restart", 2, "tcp://127.0.0.1:1")),
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

    /** Collects what one subscription receives: each manifest with the bytes that came with it (empty: none). */
    private static final class DataCollector implements Notifier.ManifestListener {
        final BlockingQueue<Map.Entry<Manifest, byte[]>> received = new LinkedBlockingQueue<>();

        @Override
        public void onManifest(Manifest manifest) {
            received.add(Map.entry(manifest, new byte[0]));
        }

        @Override
        public void onManifest(Manifest manifest, MemorySegment data) {
            assertTrue(data.isReadOnly(), "the listener gets the bytes read-only");
            received.add(Map.entry(manifest, data.toArray(ValueLayout.JAVA_BYTE)));
        }

        Map.Entry<Manifest, byte[]> next() throws InterruptedException {
            Map.Entry<Manifest, byte[]> e = received.poll(10, TimeUnit.SECONDS);
            assertNotNull(e, "no manifest within 10 s");
            return e;
        }
    }

    @Test
    void aVersionsBytesTravelWithItsManifestToSubscribersAndToLaterOnes() throws Exception {
        // Both ways a publication reaches the broker: from the producer hosting it, and over a connection.
        Notifier host = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST));
        Notifier remote = own(provider.open(host.uri(), Role.PRODUCER, FAST));
        Notifier consumer = own(provider.open(host.uri(), Role.CONSUMER, FAST));
        DataCollector early = new DataCollector();
        own(consumer.subscribe("inl", early));
        byte[] v1 = new byte[16];
        new Random(1).nextBytes(v1);
        host.publish(manifest("inl", 1, "tcp://127.0.0.1:1"), MemorySegment.ofArray(v1));
        Map.Entry<Manifest, byte[]> got = early.next();
        assertEquals(1, got.getKey().version());
        assertArrayEquals(v1, got.getValue());
        byte[] v2 = new byte[16];
        new Random(2).nextBytes(v2);
        remote.publish(manifest("inl", 2, "tcp://127.0.0.1:1"), MemorySegment.ofArray(v2));
        got = early.next();
        assertEquals(2, got.getKey().version());
        assertArrayEquals(v2, got.getValue());

        // A subscriber that comes later gets the latest version with its bytes.
        Notifier later = own(provider.open(host.uri(), Role.CONSUMER, FAST));
        DataCollector late = new DataCollector();
        own(later.subscribe("inl", late));
        got = late.next();
        assertEquals(2, got.getKey().version());
        assertArrayEquals(v2, got.getValue());

        // The manifest alone, and bytes that do not fit the manifest: refused by the publisher, and by the broker.
        host.publish(manifest("inl", 3, "tcp://127.0.0.1:1"));
        got = early.next();
        assertEquals(3, got.getKey().version());
        assertEquals(0, got.getValue().length);
        IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class,
                () -> remote.publish(manifest("inl", 4, "tcp://127.0.0.1:1"), MemorySegment.ofArray(new byte[5])));
        assertEquals("inline data of inl v4: 5 bytes for a version of 16 (at most 1048576 travel inline)", wrong.getMessage());
        try (RawClient raw = new RawClient(host.uri())) {
            byte[] payload = RawClient.publishPayload(5, "inl", ManifestCodec.encode(manifest("inl", 4, "tcp://h:1")));
            byte[] withFive = Arrays.copyOf(payload, payload.length + 5);
            raw.send(RawClient.frame(0x04, withFive));
            byte[] err = raw.readFrame();
            assertEquals(0x14, err[0], "ERROR: 5 bytes for a version of 16");
            raw.send(RawClient.frame(0x01, new byte[0]));
            assertEquals(0x11, raw.readFrame()[0], "the connection still answers HELLO");
        }
        assertNull(early.received.poll(200, TimeUnit.MILLISECONDS), "nothing refused reached the subscriber");
    }

    @Test
    void theHostingProducerHandsPublicationsToItsBrokerAndLearnsTheAnswerLater() throws Exception {
        Notifier host = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST));
        Notifier remote = own(provider.open(host.uri(), Role.PRODUCER, FAST));
        Notifier consumer = own(provider.open(host.uri(), Role.CONSUMER, FAST));
        assertTrue(host.publishesLocally(), "the broker is in the hosting producer's process");
        assertFalse(remote.publishesLocally(), "a producer that connects to the broker waits on the network");
        UnsupportedOperationException notHere = assertThrows(UnsupportedOperationException.class,
                () -> remote.publishLocally(manifest("loc", 1, "tcp://127.0.0.1:1"), MemorySegment.ofArray(new byte[16])));
        assertTrue(notHere.getMessage().contains("the broker is not in this process"), notHere.getMessage());

        DataCollector c = new DataCollector();
        own(consumer.subscribe("loc", c));
        byte[] v1 = new byte[16];
        new Random(3).nextBytes(v1);
        MemorySegment staging = Arena.ofAuto().allocate(16);
        MemorySegment.copy(v1, 0, staging, ValueLayout.JAVA_BYTE, 0, 16);
        CompletableFuture<Void> accepted = host.publishLocally(manifest("loc", 1, "tcp://127.0.0.1:1"), staging);
        staging.fill((byte) 0); // read before publishLocally returned: the caller may reuse its buffer at once
        accepted.get(10, TimeUnit.SECONDS);
        Map.Entry<Manifest, byte[]> got = c.next();
        assertEquals(1, got.getKey().version());
        assertArrayEquals(v1, got.getValue());

        // A refusal completes the future with what publish would throw.
        Manifest otherBytes = new Manifest("loc", 1, "impostor", 0, new LinkedHashMap<>(),
                List.of(new TensorEntry(new TensorInfo("w", DType.F32, new long[] {4}, 0, 16), new ContentHash(66, 66))), List.of());
        CompletableFuture<Void> stale = host.publishLocally(otherBytes, MemorySegment.ofArray(new byte[16]));
        ExecutionException e = assertThrows(ExecutionException.class, () -> stale.get(10, TimeUnit.SECONDS));
        assertInstanceOf(ViperConfigException.class, e.getCause());
        assertTrue(e.getCause().getMessage().contains("it holds another v1 of loc"), e.getCause().getMessage());
    }

    @Test
    void producerHostsTheBrokerAndASecondProducerJoinsIt() throws Exception {
        Notifier host = provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST);
        URI uri = host.uri();
        assertNotEquals(0, uri.getPort(), "uri() names the real port");
        Notifier second = own(provider.open(uri, Role.PRODUCER, FAST));
        assertEquals(uri, second.uri());
        Notifier consumer = own(provider.open(uri, Role.CONSUMER, FAST));
        Collector c = new Collector();
        own(consumer.subscribe("hosted", c));
        host.publish(manifest("hosted", 1, "tcp://127.0.0.1:1"));
        assertEquals(1, c.next().version());
        second.publish(manifest("hosted", 2, "tcp://127.0.0.1:1"));
        assertEquals(2, c.next().version());
        // The hosting producer goes away, and with it the broker: the consumer is told and keeps trying.
        host.close();
        assertTrue(c.problem().contains(uri.toString()), "the problem names the broker");
    }

    @Test
    void olderVersionIsRefusedSameVersionIsDelivered() throws Exception {
        Notifier producer = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST));
        Notifier consumer = own(provider.open(producer.uri(), Role.CONSUMER, FAST));
        Collector c = new Collector();
        own(consumer.subscribe("stale", c));
        Thread.sleep(200);
        producer.publish(manifest("stale", 5, "tcp://127.0.0.1:1"));
        assertEquals(5, c.next().version());
        ViperConfigException refused = assertThrows(ViperConfigException.class, () -> producer.publish(manifest("stale", 3, "tcp://127.0.0.1:1")));
        assertTrue(refused.getMessage().contains("the broker refused stale v3: it holds v5 of stale"), refused.getMessage());
        Manifest otherBytes = new Manifest("stale", 5, "impostor", 0, new LinkedHashMap<>(),
                List.of(new TensorEntry(new TensorInfo("w", DType.F32, new long[] {2}, 0, 8), new ContentHash(66, 66))), List.of());
        ViperConfigException reused = assertThrows(ViperConfigException.class, () -> producer.publish(otherBytes));
        assertTrue(reused.getMessage().contains("it holds another v5 of stale"), reused.getMessage());
        producer.publish(manifest("stale", 5, "tcp://127.0.0.1:2"));
        Manifest again = c.next();
        assertEquals(5, again.version());
        assertEquals("tcp://127.0.0.1:2", again.locations().getFirst().uri().toString());
        // A second subscription to the same model gets the latest at once.
        Collector d = new Collector();
        own(consumer.subscribe("stale", d));
        assertEquals("tcp://127.0.0.1:2", d.next().locations().getFirst().uri().toString());
        assertNull(c.manifests.poll(200, TimeUnit.MILLISECONDS), "v3 never arrived");
    }

    @Test
    void theBrokerTellsAStartingProducerTheLatestVersionUnlessItIsNewOnAFixedPort() throws Exception {
        Notifier hostOnAnyPort = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST));
        assertEquals(OptionalLong.of(0), hostOnAnyPort.latestVersion("lv"), "a broker on a new port: nobody can hold a version yet");
        hostOnAnyPort.publish(manifest("lv", 5, "tcp://127.0.0.1:1"));
        Notifier other = own(provider.open(hostOnAnyPort.uri(), Role.PRODUCER, FAST));
        assertEquals(OptionalLong.of(5), other.latestVersion("lv"));
        assertEquals(OptionalLong.of(0), other.latestVersion("never"));

        Notifier hostOnFixedPort = own(provider.open(URI.create("embedded://127.0.0.1:" + freePort()), Role.PRODUCER, FAST));
        assertEquals(OptionalLong.empty(), hostOnFixedPort.latestVersion("lv"),
                "a broker just started where an earlier one may have announced versions cannot vouch for them");
        hostOnFixedPort.publish(manifest("lv", 2, "tcp://127.0.0.1:1"));
        assertEquals(OptionalLong.of(2), hostOnFixedPort.latestVersion("lv"));
    }

    @Test
    void consumerWaitsForABrokerThatIsNotUpYet() throws Exception {
        int port = freePort();
        URI uri = URI.create("embedded://127.0.0.1:" + port);
        Notifier consumer = own(provider.open(uri, Role.CONSUMER, FAST));
        Collector c = new Collector();
        own(consumer.subscribe("early", c));
        assertTrue(c.problem().contains("unreachable"), "the listener is told the broker is unreachable");
        RetriableViperException e = assertThrows(RetriableViperException.class, () -> consumer.publish(manifest("early", 1, "tcp://h:1")));
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
            RetriableViperException e = assertThrows(RetriableViperException.class, () -> provider.open(
                    URI.create("embedded://127.0.0.1:" + stranger.getLocalPort()), Role.PRODUCER, ViperConfig.of(Map.of("viper.notify.timeout.ms", "500"))));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 3000, "gave up after " + ms + " ms");
            assertTrue(e.getMessage().contains("no embedded broker answers"), e.getMessage());
            acceptor.interrupt();
        }
    }

    @Test
    void failingListenerDoesNotStopDeliveryAndClosedSubscriptionsGetNothing() throws Exception {
        Notifier producer = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST));
        Notifier consumer = own(provider.open(producer.uri(), Role.CONSUMER, FAST));
        BlockingQueue<Long> seen = new LinkedBlockingQueue<>();
        own(consumer.subscribe("flaky", m -> {
            seen.add(m.version());
            throw new IllegalStateException("listener bug");
        }));
        Collector closedOne = new Collector();
        Notifier.Subscription s = consumer.subscribe("flaky", closedOne);
        s.close();
        s.close();
        Thread.sleep(200);
        producer.publish(manifest("flaky", 1, "tcp://127.0.0.1:1"));
        producer.publish(manifest("flaky", 2, "tcp://127.0.0.1:1"));
        assertEquals(1L, seen.poll(10, TimeUnit.SECONDS));
        assertEquals(2L, seen.poll(10, TimeUnit.SECONDS));
        assertNull(closedOne.manifests.poll(200, TimeUnit.MILLISECONDS));
    }

    /** A manifest whose encoding is about {@code bytes} long, padded with metadata. */
    private static Manifest bigManifest(String model, long version, int bytes) {
        var meta = new LinkedHashMap<String, String>();
        String chunk = "x".repeat(100_000);
        for (int i = 0; i < bytes / 100_000; i++) {
            meta.put("pad." + i, chunk);
        }
        return new Manifest(model, version, "behaviour", Manifest.nowMicros(), meta,
                List.of(new TensorEntry(new TensorInfo("w", DType.F32, new long[] {4}, 0, 16), new ContentHash(version, 1))),
                List.of(new Location(URI.create("tcp://127.0.0.1:1"), Tier.HOST)));
    }

    @Test
    void manifestsUpToTheCodecLimitTravelLargerOnesAreRefused() throws Exception {
        // A broker takes frames up to viper.limits.frame.bytes (8 MiB by default): raised here to the codec's limit.
        Notifier producer = own(provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, ViperConfig.of(Map.of("viper.limits.frame.bytes", "33m"))));
        Notifier consumer = own(provider.open(producer.uri(), Role.CONSUMER, ViperConfig.defaults()));
        Collector c = new Collector();
        own(consumer.subscribe("big", c));
        Manifest near = bigManifest("big", 1, ManifestCodec.MAX_ENCODED_BYTES - 200_000);
        int size = ManifestCodec.encode(near).length;
        assertTrue(size > ManifestCodec.MAX_ENCODED_BYTES - 300_000 && size <= ManifestCodec.MAX_ENCODED_BYTES, "size " + size);
        producer.publish(near);
        Manifest got = c.next();
        assertEquals(near.metadata(), got.metadata());
        ViperException tooBig = assertThrows(ViperException.class, () -> producer.publish(bigManifest("big", 2, ManifestCodec.MAX_ENCODED_BYTES + 100_000)));
        assertEquals(ViperException.Reason.FORMAT, tooBig.reason());
        assertFalse(tooBig.isRetriable());
        producer.publish(manifest("big", 3, "tcp://127.0.0.1:1"));
        assertEquals(3, c.next().version());
    }

    @Test
    void badUrisAndUseAfterCloseFailClearly() {
        assertThrows(ViperException.class, () -> provider.open(URI.create("embedded://127.0.0.1:0"), Role.CONSUMER, FAST));
        assertThrows(ViperException.class, () -> provider.open(URI.create("kafka://127.0.0.1:9092"), Role.CONSUMER, FAST));
        assertThrows(ViperException.class, () -> provider.open(URI.create("embedded://127.0.0.1:1/x"), Role.CONSUMER, FAST));
        assertThrows(ViperException.class, () -> provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER,
                ViperConfig.of(Map.of("viper.notify.timeout.ms", "-1"))));
        Notifier n = provider.open(URI.create("embedded://127.0.0.1:0"), Role.PRODUCER, FAST);
        assertThrows(ViperException.class, () -> n.subscribe("bad/name", m -> { }));
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
