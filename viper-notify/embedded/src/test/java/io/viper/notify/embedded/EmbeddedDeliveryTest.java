package io.viper.notify.embedded;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider.Role;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Delivery beyond the conformance suite: quick listeners on the event loop, refused and repeated versions, a failing
 * listener, bytes that travel with their manifest, manifests up to the codec's limit.
 */
class EmbeddedDeliveryTest extends EmbeddedNotifierTestBase {
    /** A manifest whose encoding is about {@code bytes} long, padded with metadata. */
    private static Manifest bigManifest(String model, long version, int bytes) {
        var meta = new LinkedHashMap<String, String>();
        String chunk = "x".repeat(100_000);
        for (int i = 0; i < bytes / 100_000; i++) {
            meta.put("pad." + i, chunk);
        }
        return new Manifest(
                model,
                version,
                "behaviour",
                Manifest.nowMicros(),
                meta,
                List.of(new TensorEntry(
                        new TensorInfo("w", DType.F32, new long[] {4}, 0, 16), new ContentHash(version, 1))),
                List.of(new Location(URI.create("tcp://127.0.0.1:1"), Tier.HOST)));
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
        assertTrue(
                threads.stream().allMatch(t -> t.startsWith("viper-notify-client-")),
                "called on the event loop: " + threads);
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
        ViperConfigException refused = assertThrows(
                ViperConfigException.class, () -> producer.publish(manifest("stale", 3, "tcp://127.0.0.1:1")));
        assertTrue(
                refused.getMessage().contains("the broker refused stale v3: it holds v5 of stale"),
                refused.getMessage());
        Manifest otherBytes = new Manifest(
                "stale",
                5,
                "impostor",
                0,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(new TensorInfo("w", DType.F32, new long[] {2}, 0, 8), new ContentHash(66, 66))),
                List.of());
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
        IllegalArgumentException wrong = assertThrows(
                IllegalArgumentException.class,
                () -> remote.publish(manifest("inl", 4, "tcp://127.0.0.1:1"), MemorySegment.ofArray(new byte[5])));
        assertEquals(
                "inline data of inl v4: 5 bytes for a version of 16 (at most 1048576 travel inline)",
                wrong.getMessage());
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
    void manifestsUpToTheCodecLimitTravelLargerOnesAreRefused() throws Exception {
        // A broker takes frames up to viper.limits.frame.bytes (8 MiB by default): raised here to the codec's limit.
        Notifier producer = own(provider.open(
                URI.create("embedded://127.0.0.1:0"),
                Role.PRODUCER,
                ViperConfig.of(Map.of("viper.limits.frame.bytes", "33m"))));
        Notifier consumer = own(provider.open(producer.uri(), Role.CONSUMER, ViperConfig.defaults()));
        Collector c = new Collector();
        own(consumer.subscribe("big", c));
        Manifest near = bigManifest("big", 1, ManifestCodec.MAX_ENCODED_BYTES - 200_000);
        int size = ManifestCodec.encode(near).length;
        assertTrue(
                size > ManifestCodec.MAX_ENCODED_BYTES - 300_000 && size <= ManifestCodec.MAX_ENCODED_BYTES,
                "size " + size);
        producer.publish(near);
        Manifest got = c.next();
        assertEquals(near.metadata(), got.metadata());
        ViperException tooBig = assertThrows(
                ViperException.class,
                () -> producer.publish(bigManifest("big", 2, ManifestCodec.MAX_ENCODED_BYTES + 100_000)));
        assertEquals(ViperException.Reason.FORMAT, tooBig.reason());
        assertFalse(tooBig.isRetriable());
        producer.publish(manifest("big", 3, "tcp://127.0.0.1:1"));
        assertEquals(3, c.next().version());
    }
}
