package io.viper.notify.kafka;

import static io.viper.notify.kafka.TestManifests.manifest;
import static io.viper.notify.kafka.TestManifests.pfs;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.auth.ManifestTrust;
import io.viper.errors.RetriableViperException;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The Kafka notifier's integration tests, written once and run against each kind of broker: an in-process KRaft broker
 * ({@link KafkaNotifierEmbeddedIT}) and a Testcontainers Kafka ({@link KafkaNotifierContainerIT}, skipped where no
 * Docker engine answers). Subclasses say where the broker is and how to stop and start it on the same address.
 */
abstract class KafkaNotifierITBase {
    private static final long WAIT = 40;
    /** What producers sign with here: this user's own secret (the tests' XDG_CONFIG_HOME). */
    private static final ManifestTrust SIGNER = ManifestTrust.fromConfig(ViperConfig.defaults());

    private final List<AutoCloseable> closeables = new ArrayList<>();

    /** The brokers, as {@code host:port[,host:port]}. */
    protected abstract String bootstrapServers();

    /** Stops the broker(s), keeping address and data. */
    protected abstract void stopBroker() throws Exception;

    /** Starts the broker(s) again on the same address and waits until they answer. */
    protected abstract void startBroker() throws Exception;

    @AfterEach
    void closeAll() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
        closeables.clear();
    }

    private static String unique(String base) {
        return base + "-" + Long.toHexString(System.nanoTime());
    }

    private URI uri(String topic) {
        return URI.create("kafka://" + bootstrapServers() + "?topic=" + topic);
    }

    private Notifier open(String topic, NotifierProvider.Role role, long timeoutMs) {
        Notifier n = new KafkaNotifierProvider()
                .open(uri(topic), role, ViperConfig.of(Map.of("viper.notify.timeout.ms", Long.toString(timeoutMs))));
        closeables.add(n);
        return n;
    }

    /** A listener that queues manifests and problems. */
    private static final class Recorder implements Notifier.ManifestListener {
        final BlockingQueue<Manifest> manifests = new LinkedBlockingQueue<>();
        final BlockingQueue<String> problems = new LinkedBlockingQueue<>();
        /** Per version received, the bytes that came with it (empty: none). */
        final Map<Long, byte[]> data = new ConcurrentHashMap<>();

        @Override
        public void onManifest(Manifest manifest) {
            data.put(manifest.version(), new byte[0]);
            manifests.add(manifest);
        }

        @Override
        public void onManifest(Manifest manifest, MemorySegment bytes) {
            data.put(manifest.version(), bytes.toArray(ValueLayout.JAVA_BYTE));
            manifests.add(manifest);
        }

        @Override
        public void onProblem(String problem) {
            problems.add(problem);
        }

        Manifest next() throws InterruptedException {
            Manifest m = manifests.poll(WAIT, TimeUnit.SECONDS);
            assertNotNull(m, "no manifest within " + WAIT + " s");
            return m;
        }

        String problem(String containing) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT);
            while (System.nanoTime() < deadline) {
                String p = problems.poll(1, TimeUnit.SECONDS);
                if (p != null && p.contains(containing)) {
                    return p;
                }
            }
            throw new AssertionError("no problem report containing '" + containing + "' within " + WAIT + " s");
        }
    }

    private Recorder subscribe(Notifier n, String model) {
        Recorder r = new Recorder();
        closeables.add(n.subscribe(model, r));
        return r;
    }

    private KafkaProducer<byte[], byte[]> rawProducer() {
        Properties p = new Properties();
        p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        KafkaProducer<byte[], byte[]> raw =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        closeables.add(raw);
        return raw;
    }

    @Test
    void oneProducerAndThreeConsumersInSeparateProcessesThenALateConsumer() throws Exception {
        String topic = unique("viper.procs");
        String model = unique("nt3");
        String uri = uri(topic).toString();
        List<ChildJvm> consumers = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ChildJvm c = new ChildJvm("consumer", uri, model);
            closeables.add(c);
            consumers.add(c);
        }
        for (ChildJvm c : consumers) {
            c.await("READY", 60);
        }
        try (ChildJvm producer = new ChildJvm("producer", uri, model, "5")) {
            assertEquals(
                    0,
                    producer.waitFor(90),
                    "producer exit code; output " + producer.output() + "; stderr " + producer.stderrTail());
            assertEquals(
                    6, producer.output("PUBLISHED").size(), "every publish was acknowledged: " + producer.output());
        }
        for (ChildJvm c : consumers) {
            String line = c.await("MANIFEST " + model + " 5 ", WAIT);
            while (!line.contains("file:")) {
                line = c.await("MANIFEST " + model + " 5 ", WAIT);
            }
            assertTrue(line.endsWith(pfs(model, 5)), "the last manifest carries the PFS location: " + line);
            long last = 0;
            for (String m : c.output("MANIFEST")) {
                long v = Long.parseLong(m.split(" ")[2]);
                assertTrue(v >= last, "versions never go back: " + c.output());
                last = v;
            }
        }
        // The producer has exited: a consumer that starts now finds the latest version, with its PFS location, first.
        try (ChildJvm late = new ChildJvm("consumer", uri, model)) {
            late.await("READY", 60);
            String first = late.await("MANIFEST", WAIT);
            assertEquals(
                    "MANIFEST " + model + " 5 tcp://127.0.0.1:45 " + pfs(model, 5),
                    first,
                    "a late consumer gets the latest manifest first, not the history");
            Thread.sleep(500);
            assertEquals(1, late.output("MANIFEST").size(), "nothing older follows: " + late.output());
        }
    }

    @Test
    void brokerRestartDuringARun() throws Exception {
        String topic = unique("viper.restart");
        String model = unique("restart");
        Notifier producer = open(topic, NotifierProvider.Role.PRODUCER, 4_000);
        Notifier consumer = open(topic, NotifierProvider.Role.CONSUMER, 4_000);
        Recorder rec = subscribe(consumer, model);
        producer.publish(manifest(model, 1, "tcp://127.0.0.1:1"));
        assertEquals(1, rec.next().version());

        stopBroker();
        try {
            RetriableViperException e = assertThrows(
                    RetriableViperException.class,
                    () -> producer.publish(manifest(model, 2, "tcp://127.0.0.1:1")),
                    "publish while the broker is down");
            assertTrue(e.getMessage().contains(model + " v2"), "the error names the manifest: " + e.getMessage());
            assertTrue(
                    rec.problem("unreachable").contains(bootstrapServers()),
                    "the consumer reports the broker as unreachable");
        } finally {
            startBroker();
        }
        // the producer is retried by its caller, as the SDK does with RetriableViperException
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT);
        while (true) {
            try {
                producer.publish(manifest(model, 3, "tcp://127.0.0.1:1"));
                break;
            } catch (RetriableViperException e) {
                assertTrue(
                        System.nanoTime() < deadline, "publish did not succeed after the restart: " + e.getMessage());
            }
        }
        Manifest m = rec.next();
        if (m.version() == 2) { // the failed publish may still have reached the broker before it stopped
            m = rec.next();
        }
        assertEquals(3, m.version(), "the consumer follows on after the restart");
        assertNull(rec.manifests.poll(500, TimeUnit.MILLISECONDS), "nothing older or repeated arrives");
    }

    @Test
    void aSmallVersionsBytesTravelInItsRecordToSubscribersAndLateOnes() throws Exception {
        String topic = unique("viper.inline");
        String model = unique("inline");
        Notifier producer = open(topic, NotifierProvider.Role.PRODUCER, 10_000);
        Notifier consumer = open(topic, NotifierProvider.Role.CONSUMER, 10_000);
        Recorder live = subscribe(consumer, model);
        byte[] v1 = new byte[64];
        new Random(1).nextBytes(v1);
        producer.publish(manifest(model, 1, "tcp://127.0.0.1:1"), MemorySegment.ofArray(v1));
        assertEquals(1, live.next().version());
        assertArrayEquals(v1, live.data.get(1L));
        producer.publish(manifest(model, 2, "tcp://127.0.0.1:1"));
        assertEquals(2, live.next().version());
        assertEquals(0, live.data.get(2L).length, "a manifest published alone comes alone");
        byte[] v3 = new byte[64];
        new Random(3).nextBytes(v3);
        producer.publish(manifest(model, 3, "tcp://127.0.0.1:1"), MemorySegment.ofArray(v3));
        assertEquals(3, live.next().version());
        // A consumer that starts later finds the latest record with its bytes.
        Recorder late = subscribe(open(topic, NotifierProvider.Role.CONSUMER, 10_000), model);
        assertEquals(3, late.next().version());
        assertArrayEquals(v3, late.data.get(3L));
        assertThrows(
                IllegalArgumentException.class,
                () -> producer.publish(manifest(model, 4, "tcp://127.0.0.1:1"), MemorySegment.ofArray(new byte[5])));
    }

    @Test
    void consumerStartedWhileTheBrokerIsDownCatchesUpWhenItComes() throws Exception {
        String topic = unique("viper.down");
        String model = unique("down");
        Notifier producer = open(topic, NotifierProvider.Role.PRODUCER, 10_000);
        producer.publish(manifest(model, 1, "tcp://127.0.0.1:1"));
        producer.publish(manifest(model, 2, "tcp://127.0.0.1:1"));
        stopBroker();
        Recorder rec;
        try {
            Notifier consumer = open(topic, NotifierProvider.Role.CONSUMER, 2_000);
            rec = subscribe(consumer, model);
            assertTrue(
                    rec.problem("unreachable").contains(bootstrapServers()),
                    "the consumer says the broker is unreachable");
            assertNull(rec.manifests.poll(200, TimeUnit.MILLISECONDS));
        } finally {
            startBroker();
        }
        assertEquals(2, rec.next().version(), "once the broker is back the latest version arrives first");
        assertNull(rec.manifests.poll(500, TimeUnit.MILLISECONDS), "the older version is not delivered after it");
    }

    @Test
    void malformedRecordsFromARawProducerAreSkippedAndOlderVersionsIgnored() throws Exception {
        String topic = unique("viper.malformed");
        String model = unique("bad");
        Notifier producer = open(topic, NotifierProvider.Role.PRODUCER, 10_000);
        Notifier consumer = open(topic, NotifierProvider.Role.CONSUMER, 10_000);
        Recorder rec = subscribe(consumer, model);
        producer.publish(manifest(model, 2, "tcp://127.0.0.1:1"));
        assertEquals(2, rec.next().version());

        KafkaProducer<byte[], byte[]> raw = rawProducer();
        byte[] key = model.getBytes(StandardCharsets.UTF_8);
        // signed, as a producer's records are: it is refused for its model, not for its signature
        byte[] otherModel = SIGNER.seal(ManifestCodec.encode(manifest(unique("other"), 9, "tcp://127.0.0.1:1")));
        List<ProducerRecord<byte[], byte[]>> bad = List.of(
                new ProducerRecord<>(topic, key, "{not json".getBytes(StandardCharsets.UTF_8)),
                new ProducerRecord<>(topic, key, new byte[] {0, 1, 2, (byte) 0xff}),
                new ProducerRecord<>(
                        topic, key, SIGNER.seal("{\"format\":4,\"model\":\"x\"}".getBytes(StandardCharsets.UTF_8))),
                new ProducerRecord<>(topic, key, otherModel),
                new ProducerRecord<>(
                        topic,
                        new byte[] {(byte) 0xff, '/', '.'},
                        ManifestCodec.encode(manifest(model, 5, "tcp://127.0.0.1:1"))),
                new ProducerRecord<>(topic, key, ManifestCodec.encode(manifest(model, 1, "tcp://127.0.0.1:1"))));
        for (ProducerRecord<byte[], byte[]> r : bad) {
            raw.send(r).get(WAIT, TimeUnit.SECONDS);
        }
        producer.publish(manifest(model, 3, "tcp://127.0.0.1:1"));
        assertEquals(3, rec.next().version(), "a good manifest after bad records arrives; the older v1 was ignored");
        assertNull(rec.manifests.poll(300, TimeUnit.MILLISECONDS), "no malformed record reached the listener");
        assertTrue(
                rec.problem("not signed").contains(topic + "/0@"),
                "garbage is not signed; the problem names topic, partition and offset");
        assertTrue(rec.problem("format 4 is not supported").contains(topic));
        assertTrue(rec.problem("does not match the manifest's model").contains(model));
        assertTrue(
                rec.problem("key is not a valid model name").contains(topic),
                "a record with a bad key is reported to every subscription");

        // a consumer that starts now skips the same records and gets v3 first
        Notifier late = open(topic, NotifierProvider.Role.CONSUMER, 10_000);
        Recorder lateRec = subscribe(late, model);
        assertEquals(3, lateRec.next().version());
        assertNull(lateRec.manifests.poll(300, TimeUnit.MILLISECONDS));
    }

    @Test
    void forgedRecordsReachNoConsumerAndLockNoProducerOut() throws Exception {
        // Issue 39, cases 1 and 2 through Kafka, which Viper's handshake does not guard: anyone who may write to the
        // topic could announce any manifest, and compaction kept a forged v2^53-1 for good.
        String topic = unique("viper.forged");
        String model = unique("forged");
        Notifier producer = open(topic, NotifierProvider.Role.PRODUCER, 10_000);
        Notifier consumer = open(topic, NotifierProvider.Role.CONSUMER, 10_000);
        Recorder rec = subscribe(consumer, model);
        Manifest v2 = manifest(model, 2, "tcp://127.0.0.1:1");
        producer.publish(v2);
        assertEquals(2, rec.next().version());
        KafkaProducer<byte[], byte[]> raw = rawProducer();
        byte[] key = model.getBytes(StandardCharsets.UTF_8);
        byte[] signedV2 = SIGNER.seal(ManifestCodec.encode(v2));
        String replayed = new String(signedV2, StandardCharsets.UTF_8).replace("\"version\":2,", "\"version\":3,");
        for (byte[] forged : List.of(
                ManifestCodec.encode(manifest(model, 3, "tcp://127.0.0.1:1")),
                replayed.getBytes(StandardCharsets.UTF_8),
                ManifestCodec.encode(manifest(model, Manifest.MAX_VERSION, "tcp://127.0.0.1:1")),
                SIGNER.seal(ManifestCodec.encode(manifest(model, Manifest.MAX_VERSION, "tcp://127.0.0.1:1"))))) {
            raw.send(new ProducerRecord<>(topic, key, forged)).get(WAIT, TimeUnit.SECONDS);
        }
        assertEquals(
                OptionalLong.of(2),
                producer.latestVersion(model),
                "a starting producer numbers on from the last signed version, not from a forged v2^53-1");
        producer.publish(manifest(model, 4, "tcp://127.0.0.1:1"));
        assertEquals(4, rec.next().version(), "the next real version arrives; no forged one came before it");
        assertTrue(rec.problem("not signed").contains(topic));
        assertTrue(rec.problem("does not verify").contains(topic));
        assertTrue(rec.problem("viper.versions.max.jump").contains(topic));
    }

    @Test
    void missingTopicIsWaitedForAndTheProducerCreatesItCompacted() throws Exception {
        String topic = unique("viper.absent");
        String model = unique("absent");
        Notifier consumer = open(topic, NotifierProvider.Role.CONSUMER, 5_000);
        Recorder rec = subscribe(consumer, model);
        assertTrue(rec.problem("does not exist").contains(topic), "the consumer says which topic is missing");

        Notifier producer = open(topic, NotifierProvider.Role.PRODUCER, 10_000);
        producer.publish(manifest(model, 1, "tcp://127.0.0.1:1"));
        assertEquals(1, rec.next().version(), "the consumer picks the topic up once the producer created it");

        Properties p = new Properties();
        p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        try (Admin admin = Admin.create(p)) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            Config config = admin.describeConfigs(List.of(res))
                    .all()
                    .get(WAIT, TimeUnit.SECONDS)
                    .get(res);
            assertEquals("compact", config.get("cleanup.policy").value());
            int brokers =
                    admin.describeCluster().nodes().get(WAIT, TimeUnit.SECONDS).size();
            int rf = Math.min(3, brokers);
            assertEquals(
                    Integer.toString(Math.max(1, rf - 1)),
                    config.get("min.insync.replicas").value());
            assertEquals(
                    rf,
                    admin.describeTopics(List.of(topic))
                            .allTopicNames()
                            .get(WAIT, TimeUnit.SECONDS)
                            .get(topic)
                            .partitions()
                            .get(0)
                            .replicas()
                            .size());
        }
    }
}
