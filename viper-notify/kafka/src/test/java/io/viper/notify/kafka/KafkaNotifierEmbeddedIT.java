package io.viper.notify.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperException;
import io.viper.manifest.Manifest;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link KafkaNotifierITBase} against one in-process KRaft broker ({@link EmbeddedKafkaCluster}), plus the passthrough
 * of security settings against its SASL listener.
 */
class KafkaNotifierEmbeddedIT extends KafkaNotifierITBase {
    private static EmbeddedKafkaCluster kafka;

    @BeforeAll
    static void startCluster() {
        kafka = EmbeddedKafkaCluster.start(1);
    }

    @AfterAll
    static void stopCluster() {
        if (kafka != null) {
            kafka.close();
        }
    }

    @Override
    protected String bootstrapServers() {
        return kafka.bootstrapServers();
    }

    @Override
    protected void stopBroker() {
        kafka.stop();
    }

    @Override
    protected void startBroker() {
        kafka.start();
    }

    @Test
    void securitySettingsFromAPropertiesFileReachTheClients(@TempDir Path dir) throws Exception {
        Path good = dir.resolve("client.properties");
        Files.writeString(
                good,
                "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                        + "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required"
                        + " username=\""
                        + EmbeddedKafkaCluster.SASL_USER + "\" password=\"" + EmbeddedKafkaCluster.SASL_PASSWORD
                        + "\";\n");
        URI uri = URI.create("kafka://" + kafka.saslBootstrapServers() + "?topic=viper.sasl");
        ViperConfig config = ViperConfig.of(
                Map.of("viper.kafka.properties.file", good.toString(), "viper.notify.timeout.ms", "15000"));
        try (Notifier producer = new KafkaNotifierProvider().open(uri, NotifierProvider.Role.PRODUCER, config);
                Notifier consumer = new KafkaNotifierProvider().open(uri, NotifierProvider.Role.CONSUMER, config)) {
            producer.publish(TestManifests.manifest("secure", 1, "tcp://127.0.0.1:1"));
            BlockingQueue<Manifest> got = new LinkedBlockingQueue<>();
            try (Notifier.Subscription s = consumer.subscribe("secure", got::add)) {
                Manifest m = got.poll(40, TimeUnit.SECONDS);
                assertNotNull(m, "a manifest through the SASL listener");
                assertEquals(1, m.version());
            }
        }
        // the same file with a kafka.* key overriding the password: the broker refuses, and the error says so
        ViperConfig wrong = ViperConfig.of(Map.of(
                "viper.kafka.properties.file",
                good.toString(),
                "viper.notify.timeout.ms",
                "15000",
                "kafka.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                        + EmbeddedKafkaCluster.SASL_USER + "\" password=\"wrong\";"));
        try (Notifier producer = new KafkaNotifierProvider().open(uri, NotifierProvider.Role.PRODUCER, wrong)) {
            ViperException e = assertThrows(
                    ViperException.class,
                    () -> producer.publish(TestManifests.manifest("secure", 2, "tcp://127.0.0.1:1")));
            assertFalse(e.isRetriable(), "bad credentials are not worth retrying: " + e.getMessage());
            assertTrue(e.getMessage().contains("Authentication"), e.getMessage());
        }
    }
}
