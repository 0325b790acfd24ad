package io.viper.notify.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.notify.kafka.internal.KafkaSettings;
import io.viper.notify.kafka.internal.KafkaUri;
import io.viper.notify.kafka.internal.TopicCreator;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceLoader;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KafkaSettingsTest {
    static {
        EmbeddedKafkaCluster.quietLogs();
    }

    private static final KafkaUri URI_ = KafkaUri.parse(URI.create("kafka://127.0.0.1:9092"));

    @Test
    void defaults() {
        KafkaSettings s = KafkaSettings.from(ViperConfig.defaults());
        assertEquals(30_000, s.timeoutMs());
        assertEquals(1, s.partitions());
        assertEquals(0, s.replicationFactor());
        assertTrue(s.passthrough().isEmpty());
        Properties p = s.producerProperties(URI_, "id");
        assertEquals("true", p.getProperty("enable.idempotence"));
        assertEquals("all", p.getProperty("acks"));
        assertEquals("127.0.0.1:9092", p.getProperty("bootstrap.servers"));
        assertEquals("30000", p.getProperty("max.block.ms"));
        Properties c = s.consumerProperties(URI_, "id");
        assertNull(c.getProperty("group.id"), "no consumer group");
        assertEquals("false", c.getProperty("enable.auto.commit"));
        assertEquals("false", c.getProperty("allow.auto.create.topics"));
        assertEquals("earliest", c.getProperty("auto.offset.reset"));
    }

    @Test
    void securitySettingsPassThroughFromFileAndKeysWithKeysWinning(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("client.properties");
        Files.writeString(file, """
                security.protocol=SASL_SSL
                sasl.mechanism=PLAIN
                ssl.truststore.location=/etc/kafka/truststore.jks
                """);
        KafkaSettings s = KafkaSettings.from(ViperConfig.of(Map.of(
                "viper.kafka.properties.file",
                file.toString(),
                "kafka.sasl.mechanism",
                "SCRAM-SHA-512",
                "viper.notify.timeout.ms",
                "5000")));
        for (Properties p : new Properties[] {
            s.producerProperties(URI_, "x"), s.consumerProperties(URI_, "x"), s.adminProperties(URI_, "x")
        }) {
            assertEquals("SASL_SSL", p.getProperty("security.protocol"));
            assertEquals("SCRAM-SHA-512", p.getProperty("sasl.mechanism"), "a kafka.* key overrides the file");
            assertEquals("/etc/kafka/truststore.jks", p.getProperty("ssl.truststore.location"));
        }
        assertEquals(5000, s.timeoutMs());
        assertEquals("5000", s.producerProperties(URI_, "x").getProperty("delivery.timeout.ms"));
    }

    @Test
    void everyClientWaitIsBoundedByTheNotifyTimeout() {
        // publish --timeout 5s to an unreachable broker took 61 s: each wait must end within viper.notify.timeout.ms
        KafkaSettings s = KafkaSettings.from(ViperConfig.of(Map.of("viper.notify.timeout.ms", "5000")));
        Properties producer = s.producerProperties(URI_, "x");
        Properties consumer = s.consumerProperties(URI_, "x");
        Properties admin = s.adminProperties(URI_, "x");
        for (var c : new Object[][] {
            {producer, "max.block.ms"},
            {producer, "request.timeout.ms"},
            {producer, "delivery.timeout.ms"},
            {consumer, "default.api.timeout.ms"},
            {consumer, "request.timeout.ms"},
            {admin, "default.api.timeout.ms"},
            {admin, "request.timeout.ms"}
        }) {
            long ms = Long.parseLong(((Properties) c[0]).getProperty((String) c[1]));
            assertTrue(ms > 0 && ms <= 5000, c[1] + " = " + ms);
        }
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 500, 999, 1000, 1999, 2000, 5000, 30_000, 60_000, Integer.MAX_VALUE, Long.MAX_VALUE})
    void kafkaAcceptsTheClientSettingsAtEveryNotifyTimeout(long timeoutMs) {
        // viper.notify.timeout.ms=500 (publish --timeout 500ms gives it) made Kafka refuse the admin client:
        // its default.api.timeout.ms (500) was under its request.timeout.ms (1000)
        KafkaSettings s =
                KafkaSettings.from(ViperConfig.of(Map.of("viper.notify.timeout.ms", Long.toString(timeoutMs))));
        assertKafkaCreatesEveryClient(s);
    }

    @ParameterizedTest
    @ValueSource(longs = {1, 30_000})
    void passedThroughWaitsRaiseTheTimeoutsKafkaChecksAgainstThem(long timeoutMs) {
        KafkaSettings s = KafkaSettings.from(ViperConfig.of(Map.of(
                "viper.notify.timeout.ms",
                Long.toString(timeoutMs),
                "kafka.linger.ms",
                "50",
                "kafka.request.timeout.ms",
                "60000")));
        assertEquals("60050", s.producerProperties(URI_, "x").getProperty("delivery.timeout.ms"));
        assertEquals("60000", s.adminProperties(URI_, "x").getProperty("default.api.timeout.ms"));
        assertKafkaCreatesEveryClient(s);
    }

    @Test
    void aPassedThroughTimeoutKafkaChecksIsLeftForKafkaToJudge() {
        KafkaSettings s = KafkaSettings.from(ViperConfig.of(Map.of("kafka.default.api.timeout.ms", "500")));
        assertEquals("500", s.adminProperties(URI_, "x").getProperty("default.api.timeout.ms"));
    }

    /** Creates each client against a closed port and closes it: Kafka's constructors refuse inconsistent timeouts. */
    private static void assertKafkaCreatesEveryClient(KafkaSettings s) {
        KafkaUri nowhere = KafkaUri.parse(URI.create("kafka://127.0.0.1:1"));
        try (var producer =
                new KafkaProducer<String, byte[]>(s.producerProperties(nowhere, "settings-test-producer"))) {
            producer.close(Duration.ZERO);
        }
        try (var consumer =
                new KafkaConsumer<byte[], byte[]>(s.consumerProperties(nowhere, "settings-test-consumer"))) {
            consumer.close(CloseOptions.timeout(Duration.ZERO));
        }
        try (Admin admin = Admin.create(s.adminProperties(nowhere, "settings-test-admin"))) {
            admin.close(Duration.ZERO);
        }
    }

    @Test
    void producerOnlySettingsGoToTheProducerOnly() {
        KafkaSettings s =
                KafkaSettings.from(ViperConfig.of(Map.of("kafka.linger.ms", "5", "kafka.fetch.min.bytes", "10")));
        assertEquals("5", s.producerProperties(URI_, "x").getProperty("linger.ms"));
        assertFalse(s.consumerProperties(URI_, "x").containsKey("linger.ms"));
        assertEquals("10", s.consumerProperties(URI_, "x").getProperty("fetch.min.bytes"));
        assertFalse(s.producerProperties(URI_, "x").containsKey("fetch.min.bytes"));
    }

    @Test
    void missingPropertiesFileIsNamed(@TempDir Path dir) {
        String missing = dir.resolve("nope.properties").toString();
        ViperConfigException e = assertThrows(
                ViperConfigException.class, () -> ViperConfig.of(Map.of("viper.kafka.properties.file", missing)));
        assertTrue(e.getMessage().contains(missing) && e.getMessage().contains("does not exist"), e.getMessage());
    }

    @Test
    void settingsViperOwnsCannotBeOverridden() {
        for (String key : new String[] {
            "kafka.enable.idempotence",
            "kafka.acks",
            "kafka.group.id",
            "kafka.bootstrap.servers",
            "kafka.value.serializer"
        }) {
            ViperConfigException e = assertThrows(
                    ViperConfigException.class, () -> KafkaSettings.from(ViperConfig.of(Map.of(key, "x"))));
            assertTrue(
                    e.getMessage().contains(key.substring(6)) && e.getMessage().contains("cannot be overridden"),
                    e.getMessage());
        }
    }

    @Test
    void badValuesAndUnknownViperKafkaKeysAreNamedWhenTheConfigurationIsBuilt() {
        assertMessage(
                Map.of("viper.notify.timeout.ms", "0"),
                "invalid value '0' for viper.notify.timeout.ms: must be at least 1");
        assertMessage(
                Map.of("viper.notify.timeout.ms", "soon"),
                "invalid value 'soon' for viper.notify.timeout.ms: not an integer");
        assertMessage(
                Map.of("viper.kafka.partitions", "-1"),
                "invalid value '-1' for viper.kafka.partitions: must be at least 1");
        assertMessage(
                Map.of("viper.kafka.replication.factor", "40000"),
                "invalid value '40000' for viper.kafka.replication.factor: must be at most 32767");
        assertMessage(
                Map.of("viper.kafka.partitons", "2"),
                "unknown configuration key viper.kafka.partitons (did you mean viper.kafka.partitions?)");
        assertMessage(Map.of("kafka.", "2"), "configuration key 'kafka.' is neither");
    }

    private static void assertMessage(Map<String, String> config, String expected) {
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> ViperConfig.of(config));
        assertTrue(e.getMessage().contains(expected), "'" + e.getMessage() + "' should contain '" + expected + "'");
    }

    @Test
    void declaresItsKeysAndReadsThemTyped() {
        assertEquals(KafkaConfig.KEYS, new KafkaNotifierProvider().configKeys());
        assertTrue(ViperConfig.keys().containsAll(KafkaConfig.KEYS));
        KafkaSettings s = KafkaSettings.from(
                ViperConfig.of(Map.of("viper.kafka.partitions", "3", "viper.kafka.replication.factor", "2")));
        assertEquals(3, s.partitions());
        assertEquals(2, s.replicationFactor());
    }

    @Test
    void replicationFollowsTheClusterSize() {
        assertEquals(1, TopicCreator.replicationFor(1));
        assertEquals(2, TopicCreator.replicationFor(2));
        assertEquals(3, TopicCreator.replicationFor(7));
        assertEquals(1, TopicCreator.minInsyncFor(1));
        assertEquals(1, TopicCreator.minInsyncFor(2));
        assertEquals(2, TopicCreator.minInsyncFor(3));
    }

    @Test
    void providerIsFoundByScheme() {
        NotifierProvider found = ServiceLoader.load(NotifierProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p.scheme().equals("kafka"))
                .findFirst()
                .orElseThrow();
        assertInstanceOf(KafkaNotifierProvider.class, found);
    }

    @Test
    void openingNeedsNoBrokerAndReportsTheCanonicalUri() {
        // nothing listens on port 1: opening must not contact the cluster
        try (Notifier n = new KafkaNotifierProvider()
                .open(URI.create("kafka://127.0.0.1:1"), NotifierProvider.Role.CONSUMER, ViperConfig.defaults())) {
            assertEquals(URI.create("kafka://127.0.0.1:1?topic=viper.models"), n.uri());
        }
    }

    @Test
    void publishWithoutABrokerFailsRetriablyWithinTheTimeout() {
        try (Notifier n = new KafkaNotifierProvider()
                .open(
                        URI.create("kafka://127.0.0.1:1"),
                        NotifierProvider.Role.PRODUCER,
                        ViperConfig.of(Map.of("viper.notify.timeout.ms", "1500")))) {
            long t0 = System.nanoTime();
            ViperException e = assertThrows(
                    ViperException.class, () -> n.publish(TestManifests.manifest("m", 1, "tcp://127.0.0.1:2")));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(e.isRetriable(), "retriable: " + e);
            assertTrue(e.getMessage().contains("127.0.0.1:1"), e.getMessage());
            assertTrue(ms < 10_000, "bounded by the timeout, took " + ms + " ms");
        }
    }

    @Test
    void badClientSettingsFailAtOpen() {
        ViperConfigException e = assertThrows(
                ViperConfigException.class,
                () -> new KafkaNotifierProvider()
                        .open(
                                URI.create("kafka://127.0.0.1:1"),
                                NotifierProvider.Role.PRODUCER,
                                ViperConfig.of(Map.of("kafka.security.protocol", "NOPE"))));
        assertTrue(e.getMessage().contains("Kafka producer"), e.getMessage());
    }

    @Test
    void closedNotifierRefusesWork() {
        Notifier n = new KafkaNotifierProvider()
                .open(URI.create("kafka://127.0.0.1:1"), NotifierProvider.Role.CONSUMER, ViperConfig.defaults());
        n.close();
        n.close();
        ViperException e = assertThrows(ViperException.class, () -> n.subscribe("m", m -> {}));
        assertEquals(ViperException.Reason.CLOSED, e.reason());
    }
}
