package io.viper.notify.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;

import io.viper.ViperConfig;
import io.viper.spi.NotifierProvider;
import io.viper.testing.NotifierConformanceSuite;
import java.net.URI;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The notifier conformance suite against {@code kafka://}, on one in-process KRaft broker shared by the tests of this
 * class (each test uses its own model names). Malformed input is written with a raw Kafka producer, bypassing the
 * manifest codec.
 */
class KafkaNotifierConformanceIT extends NotifierConformanceSuite {
    private static final String TOPIC = "viper.conformance";
    private static EmbeddedKafkaCluster kafka;
    private static KafkaProducer<byte[], byte[]> raw;

    @BeforeAll
    static void startBroker() {
        kafka = EmbeddedKafkaCluster.start(1);
        Properties p = new Properties();
        p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        raw = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    @AfterAll
    static void stopBroker() {
        if (raw != null) {
            raw.close();
        }
        if (kafka != null) {
            kafka.close();
        }
    }

    @Override
    protected NotifierProvider provider() {
        return new KafkaNotifierProvider();
    }

    @Override
    protected URI uri() {
        return kafka.uri(TOPIC);
    }

    @Override
    protected ViperConfig config() {
        return ViperConfig.of(Map.of("viper.notify.timeout.ms", "20000"));
    }

    @Override
    protected void injectRaw(String model, byte[] bytes) throws Exception {
        raw.send(new ProducerRecord<>(TOPIC, model.getBytes(UTF_8), bytes)).get(20, TimeUnit.SECONDS);
    }
}
