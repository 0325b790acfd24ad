package io.viper.notify.kafka.internal;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.notify.kafka.KafkaConfig;
import java.io.IOException;
import java.io.InputStream;
import java.lang.System.Logger.Level;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;

/**
 * The Kafka notifier's settings, read from the validated configuration given to
 * {@link io.viper.spi.NotifierProvider#open}: the keys of {@link KafkaConfig}, core's {@code viper.notify.timeout.ms},
 * and the Kafka client settings of the properties file ({@code viper.kafka.properties.file}) overridden by the
 * {@code kafka.<setting>} keys.
 *
 * <p>Settings Viper owns (serializers, idempotence, acks, consumer group, offsets, bootstrap servers) cannot be passed
 * through: the answer is a {@link ViperConfigException} naming the key.
 *
 * @param timeoutMs bound of blocking operations, milliseconds
 * @param partitions partitions of a topic the producer creates
 * @param replicationFactor replication factor of a topic the producer creates, or 0 for min(3, brokers)
 * @param passthrough Kafka client settings from the file and the {@code kafka.*} keys, sorted
 */
public record KafkaSettings(long timeoutMs, int partitions, int replicationFactor, Map<String, String> passthrough) {
    /** Prefix of passthrough Kafka client settings. */
    public static final String PASSTHROUGH_PREFIX = "kafka.";

    private static final System.Logger LOG = System.getLogger("io.viper.notify.kafka");

    private static final Set<String> OWNED = Set.of(
            "bootstrap.servers",
            "key.serializer",
            "value.serializer",
            "key.deserializer",
            "value.deserializer",
            "enable.idempotence",
            "acks",
            "group.id",
            "group.instance.id",
            "group.protocol",
            "enable.auto.commit",
            "auto.offset.reset",
            "allow.auto.create.topics",
            "transactional.id",
            "isolation.level");

    /** Copies {@code passthrough}. */
    public KafkaSettings {
        passthrough = Map.copyOf(passthrough);
    }

    /** Reads the settings from {@code config}; see the class comment. */
    public static KafkaSettings from(ViperConfig config) {
        Map<String, String> passthrough = new TreeMap<>();
        config.get(KafkaConfig.PROPERTIES_FILE).ifPresent(file -> passthrough.putAll(loadProperties(file)));
        passthrough.putAll(config.passthrough(PASSTHROUGH_PREFIX));
        for (String key : passthrough.keySet()) {
            if (OWNED.contains(key)) {
                throw new ViperConfigException("Kafka setting '" + key + "' (from " + PASSTHROUGH_PREFIX + key + " or "
                        + KafkaConfig.PROPERTIES_FILE.name() + ") is set by Viper and cannot be overridden"
                        + (key.equals("bootstrap.servers") ? "; name the brokers in the kafka:// URI" : ""));
            }
            if (!ProducerConfig.configNames().contains(key)
                    && !ConsumerConfig.configNames().contains(key)
                    && !AdminClientConfig.configNames().contains(key)) {
                LOG.log(
                        Level.WARNING,
                        "Kafka setting ''{0}'' is not a known client setting; passing it to every client as it is",
                        key);
            }
        }
        return new KafkaSettings(
                config.get(ViperConfig.NOTIFY_TIMEOUT_MS),
                config.get(KafkaConfig.PARTITIONS),
                config.get(KafkaConfig.REPLICATION_FACTOR),
                passthrough);
    }

    private static Map<String, String> loadProperties(Path file) {
        String key = KafkaConfig.PROPERTIES_FILE.name();
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(file)) {
            p.load(in);
        } catch (NoSuchFileException e) {
            throw new ViperConfigException(key + ": Kafka properties file '" + file + "' does not exist");
        } catch (IOException | IllegalArgumentException e) {
            throw new ViperConfigException(
                    key + ": cannot read Kafka properties file '" + file + "': " + e.getMessage());
        }
        Map<String, String> out = new TreeMap<>();
        for (String name : p.stringPropertyNames()) {
            out.put(name, p.getProperty(name));
        }
        return out;
    }

    /** The passthrough settings a client with the given known setting names takes (unknown ones go to all). */
    Properties passthroughFor(Set<String> known) {
        Properties p = new Properties();
        for (Map.Entry<String, String> e : passthrough.entrySet()) {
            boolean knownAnywhere = ProducerConfig.configNames().contains(e.getKey())
                    || ConsumerConfig.configNames().contains(e.getKey())
                    || AdminClientConfig.configNames().contains(e.getKey());
            if (known.contains(e.getKey()) || !knownAnywhere) {
                p.setProperty(e.getKey(), e.getValue());
            }
        }
        return p;
    }

    /** Settings of the producer that publishes manifests: idempotent, acks=all, bounded by the timeout. */
    public Properties producerProperties(KafkaUri uri, String clientId) {
        Properties p = new Properties();
        p.setProperty(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.setProperty(ProducerConfig.COMPRESSION_TYPE_CONFIG, "gzip");
        p.setProperty(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(MAX_MESSAGE_BYTES));
        p.setProperty(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "5000");
        p.setProperty(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.setProperty(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(requestTimeoutMs(30_000)));
        p.setProperty(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(timeoutMs));
        p.putAll(passthroughFor(ProducerConfig.configNames()));
        // Kafka refuses a delivery.timeout.ms under linger.ms + request.timeout.ms
        putCovering(
                p,
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
                ProducerConfig.LINGER_MS_CONFIG,
                ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG);
        p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, uri.bootstrapServers());
        p.setProperty(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.setProperty(ProducerConfig.ACKS_CONFIG, "all");
        p.setProperty(
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.StringSerializer");
        p.setProperty(
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                "org.apache.kafka.common.serialization.ByteArraySerializer");
        return p;
    }

    /** Settings of the consumer that follows the topic: no group, no commits, no topic auto-creation. */
    public Properties consumerProperties(KafkaUri uri, String clientId) {
        Properties p = new Properties();
        p.setProperty(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.setProperty(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, Integer.toString(MAX_MESSAGE_BYTES));
        p.setProperty(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "5000");
        p.setProperty(
                ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                Long.toString(Math.max(MIN_REQUEST_TIMEOUT_MS, Math.min(timeoutMs, 10_000))));
        p.setProperty(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(requestTimeoutMs(10_000)));
        p.putAll(passthroughFor(ConsumerConfig.configNames()));
        p.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, uri.bootstrapServers());
        p.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.setProperty(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        p.setProperty(
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
                "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.setProperty(
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
                "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        return p;
    }

    /** Settings of the admin client that creates the topic. */
    public Properties adminProperties(KafkaUri uri, String clientId) {
        Properties p = new Properties();
        p.setProperty(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
        p.setProperty(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "5000");
        p.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(requestTimeoutMs(30_000)));
        p.putAll(passthroughFor(AdminClientConfig.configNames()));
        // Kafka refuses a default.api.timeout.ms under request.timeout.ms
        putCovering(p, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG);
        p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, uri.bootstrapServers());
        return p;
    }

    /**
     * A client's {@code request.timeout.ms}: half the notify timeout, at least {@link #MIN_REQUEST_TIMEOUT_MS} and at
     * most {@code maxMs}. A shorter notify timeout is kept by the notifier's own waits, which end the operation
     * (publish, topic creation, scan) whatever the client is still waiting for.
     */
    private long requestTimeoutMs(long maxMs) {
        return Math.max(MIN_REQUEST_TIMEOUT_MS, Math.min(maxMs, timeoutMs / 2));
    }

    /**
     * Sets the int-typed Kafka timeout {@code key} to the notify timeout, raised to the sum of the {@code parts}
     * settings the client will use (passthrough included) and lowered to {@link Integer#MAX_VALUE}, Kafka's most; a
     * passthrough setting of {@code key} itself is left as it is, for Kafka to judge.
     */
    private void putCovering(Properties p, String key, String... parts) {
        if (passthrough.containsKey(key)) {
            return;
        }
        long sum = 0;
        for (String part : parts) {
            sum += msOf(p.getProperty(part));
        }
        p.setProperty(key, Long.toString(Math.min(Integer.MAX_VALUE, Math.max(timeoutMs, sum))));
    }

    /** A Kafka int-typed millisecond setting as Kafka parses it; 0 for one it will refuse itself. */
    private static long msOf(String value) {
        if (value == null) {
            return 0;
        }
        try {
            return Math.max(0, Integer.parseInt(value.trim()));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /**
     * Least {@code request.timeout.ms} the notifier gives a client: a round trip to a busy broker can take most of a
     * second.
     */
    static final long MIN_REQUEST_TIMEOUT_MS = 1000;

    /** Largest record the notifier writes and reads (and the topic's {@code max.message.bytes}). */
    public static final int MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
}
