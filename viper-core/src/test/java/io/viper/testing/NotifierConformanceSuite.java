package io.viper.testing;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite every notifier passes: latest on subscribe, ordering, late joiners, republished versions, model
 * isolation and malformed input. Subclasses provide the URI of a running notifier and a way to inject raw bytes as if a
 * broken or hostile client had sent them.
 */
public abstract class NotifierConformanceSuite {
    protected static final long WAIT_SECONDS = 30;

    private final List<AutoCloseable> closeables = new ArrayList<>();

    /** The provider under test. */
    protected abstract NotifierProvider provider();

    /** The URI to open for both roles (a running broker, or one the producer role starts). */
    protected abstract URI uri();

    /** Injects {@code raw} as the value of a notification for {@code model}, bypassing the codec. */
    protected abstract void injectRaw(String model, byte[] raw) throws Exception;

    protected ViperConfig config() {
        return ViperConfig.defaults();
    }

    protected Notifier open(NotifierProvider.Role role) {
        Notifier n = provider().open(uri(), role, config());
        closeables.add(n);
        return n;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    /** A unique model name per test, so that tests sharing a broker do not see each other. */
    protected static String model(String base) {
        return base + "-" + Long.toHexString(System.nanoTime());
    }

    protected static Manifest manifest(String model, long version, String... locations) {
        List<Location> locs = new ArrayList<>();
        for (String l : locations) {
            locs.add(new Location(URI.create(l), l.startsWith("file:") ? Tier.PFS : Tier.HOST));
        }
        var meta = new LinkedHashMap<String, String>();
        meta.put("viper.iteration", Long.toString(version * 10));
        return new Manifest(
                model,
                version,
                "conformance",
                Manifest.nowMicros(),
                meta,
                List.of(new TensorEntry(
                        new TensorInfo("w", DType.F32, new long[] {2, 3}, 0, 24), new ContentHash(version, 42))),
                locs);
    }

    protected BlockingQueue<Manifest> subscribe(Notifier n, String model) {
        BlockingQueue<Manifest> q = new LinkedBlockingQueue<>();
        closeables.add(n.subscribe(model, q::add));
        return q;
    }

    protected static Manifest next(BlockingQueue<Manifest> q) throws InterruptedException {
        Manifest m = q.poll(WAIT_SECONDS, TimeUnit.SECONDS);
        assertNotNull(m, "no manifest within " + WAIT_SECONDS + " s");
        return m;
    }

    @Test
    protected void subscriberGetsTheLatestAtOnceThenNewer() throws Exception {
        String model = model("latest");
        Notifier producer = open(NotifierProvider.Role.PRODUCER);
        producer.publish(manifest(model, 1, "tcp://127.0.0.1:1"));
        producer.publish(manifest(model, 2, "tcp://127.0.0.1:1"));
        Notifier consumer = open(NotifierProvider.Role.CONSUMER);
        BlockingQueue<Manifest> q = subscribe(consumer, model);
        Manifest first = next(q);
        // A notifier may replay older entries before the latest (Kafka before compaction); the latest must arrive.
        while (first.version() < 2) {
            first = next(q);
        }
        assertEquals(2, first.version());
        assertEquals(
                manifest(model, 2, "tcp://127.0.0.1:1").tensors(),
                first.tensors(),
                "manifest content survives the trip");
        producer.publish(manifest(model, 3, "tcp://127.0.0.1:1"));
        assertEquals(3, next(q).version());
    }

    @Test
    protected void manifestsArriveInPublicationOrder() throws Exception {
        String model = model("order");
        Notifier producer = open(NotifierProvider.Role.PRODUCER);
        Notifier consumer = open(NotifierProvider.Role.CONSUMER);
        BlockingQueue<Manifest> q = subscribe(consumer, model);
        Thread.sleep(200);
        for (long v = 1; v <= 20; v++) {
            producer.publish(manifest(model, v, "tcp://127.0.0.1:1"));
        }
        long last = 0;
        while (last < 20) {
            long v = next(q).version();
            assertTrue(v > last, "version " + v + " after " + last);
            last = v;
        }
    }

    @Test
    protected void lateJoinerFindsTheLatest() throws Exception {
        String model = model("late");
        Notifier producer = open(NotifierProvider.Role.PRODUCER);
        for (long v = 1; v <= 5; v++) {
            producer.publish(manifest(model, v, "tcp://127.0.0.1:1"));
        }
        Notifier late = open(NotifierProvider.Role.CONSUMER);
        BlockingQueue<Manifest> q = subscribe(late, model);
        Manifest m = next(q);
        while (m.version() < 5) {
            m = next(q);
        }
        assertEquals(5, m.version());
    }

    @Test
    protected void republishedVersionWithMoreLocationsIsDelivered() throws Exception {
        String model = model("republish");
        Notifier producer = open(NotifierProvider.Role.PRODUCER);
        Notifier consumer = open(NotifierProvider.Role.CONSUMER);
        BlockingQueue<Manifest> q = subscribe(consumer, model);
        Thread.sleep(200);
        producer.publish(manifest(model, 1, "tcp://127.0.0.1:1"));
        producer.publish(manifest(model, 1, "tcp://127.0.0.1:1", "file:///pfs/" + model + "/1/model.safetensors"));
        Manifest a = next(q);
        Manifest b = a.locations().size() == 2 ? a : next(q);
        assertEquals(2, b.locations().size(), "the republished manifest carries the PFS location");
    }

    @Test
    protected void modelsAreIsolated() throws Exception {
        String a = model("iso-a");
        String b = model("iso-b");
        Notifier producer = open(NotifierProvider.Role.PRODUCER);
        Notifier consumer = open(NotifierProvider.Role.CONSUMER);
        BlockingQueue<Manifest> qa = subscribe(consumer, a);
        Thread.sleep(200);
        producer.publish(manifest(b, 7, "tcp://127.0.0.1:1"));
        producer.publish(manifest(a, 1, "tcp://127.0.0.1:1"));
        Manifest m = next(qa);
        assertEquals(a, m.model());
        assertNull(qa.poll(500, TimeUnit.MILLISECONDS), "nothing of another model arrives");
    }

    @Test
    protected void aStartingProducerLearnsTheNewestAnnouncedVersion() throws Exception {
        String model = model("latest-version");
        Notifier producer = open(NotifierProvider.Role.PRODUCER);
        producer.publish(manifest(model, 4, "tcp://127.0.0.1:1"));
        producer.publish(manifest(model, 6, "tcp://127.0.0.1:1"));
        Notifier restarted = open(NotifierProvider.Role.PRODUCER);
        assertEquals(OptionalLong.of(6), restarted.latestVersion(model));
        assertEquals(OptionalLong.of(0), restarted.latestVersion(model("never-published")));
    }

    @Test
    protected void malformedInputIsSkippedAndDeliveryGoesOn() throws Exception {
        String model = model("malformed");
        Notifier producer = open(NotifierProvider.Role.PRODUCER);
        Notifier consumer = open(NotifierProvider.Role.CONSUMER);
        BlockingQueue<Manifest> q = subscribe(consumer, model);
        Thread.sleep(200);
        producer.publish(manifest(model, 1, "tcp://127.0.0.1:1"));
        assertEquals(1, next(q).version());
        injectRaw(model, "{not json".getBytes(UTF_8));
        injectRaw(model, "{\"format\":99,\"model\":\"x\"}".getBytes(UTF_8));
        injectRaw(model, new byte[] {0, 1, 2, (byte) 0xff});
        producer.publish(manifest(model, 2, "tcp://127.0.0.1:1"));
        assertEquals(2, next(q).version(), "a well-formed manifest after malformed ones still arrives");
        assertNull(q.poll(300, TimeUnit.MILLISECONDS), "malformed input never reaches the listener");
    }
}
