package io.viper.notify.kafka.internal;

import io.viper.errors.ViperConfigException;
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
 * The Kafka notifier's settings, read from the {@code config} map given to
 * {@link io.viper.spi.NotifierProvider#open}.
 *
 * <ul>
 *   <li>{@value #TIMEOUT_KEY}: how long {@code publish} waits for the acknowledgement, and the bound
 *       of every blocking admin call (default {@value #DEFAULT_TIMEOUT_MS}).</li>
 *   <li>{@value #PROPERTIES_FILE_KEY}: a Java properties file of Kafka client settings (security
 *       settings such as {@code security.protocol}, {@code sasl.jaas.config}, {@code ssl.truststore.location}).</li>
 *   <li>{@code kafka.<setting>}: one Kafka client setting, passed without the prefix; overrides the
 *       file.</li>
 *   <li>{@value #PARTITIONS_KEY} (default 1) and {@value #REPLICATION_KEY} (default min(3, brokers)):
 *       used when the producer creates the topic.</li>
 * </ul>
 * Settings Viper owns (serializers, idempotence, acks, consumer group, offsets, bootstrap servers)
 * cannot be passed through: the answer is a {@link ViperConfigException} naming the key. Other
 * {@code viper.kafka.*} keys are unknown and refused; other {@code viper.*} keys belong to other
 * parts of Viper and are left alone.
 *
 * @param timeoutMs         bound of blocking operations, milliseconds
 * @param partitions        partitions of a topic the producer creates
 * @param replicationFactor replication factor of a topic the producer creates, or 0 for min(3, brokers)
 * @param passthrough       Kafka client settings from the file and the {@code kafka.*} keys, sorted
 */
public record KafkaSettings(long timeoutMs, int partitions, int replicationFactor, Map<String, String> passthrough) {
    /** Bound of {@code publish} and admin calls, milliseconds. */
    public static final String TIMEOUT_KEY = "viper.notify.timeout.ms";
    /** Default of {@link #TIMEOUT_KEY}. */
    public static final long DEFAULT_TIMEOUT_MS = 30_000;
    /** Path of a properties file of Kafka client settings. */
    public static final String PROPERTIES_FILE_KEY = "viper.kafka.properties.file";
    /** Partitions of a topic the producer creates. */
    public static final String PARTITIONS_KEY = "viper.kafka.partitions";
    /** Replication factor of a topic the producer creates. */
    public static final String REPLICATION_KEY = "viper.kafka.replication.factor";
    /** Prefix of passthrough Kafka client settings. */
    public static final String PASSTHROUGH_PREFIX = "kafka.";

    private static final System.Logger LOG = System.getLogger("io.viper.notify.kafka");

    private static final Set<String> OWNED = Set.of(
            "bootstrap.servers", "key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
            "enable.idempotence", "acks", "group.id", "group.instance.id", "group.protocol", "enable.auto.commit",
            "auto.offset.reset", "allow.auto.create.topics", "transactional.id", "isolation.level");

    /** Copies and validates. */
    public KafkaSettings {
        passthrough = Map.copyOf(passthrough);
        if (timeoutMs <= 0) {
            throw new ViperConfigException(TIMEOUT_KEY + " must be positive, got " + timeoutMs);
        }
        if (partitions <= 0) {
            throw new ViperConfigException(PARTITIONS_KEY + " must be positive, got " + partitions);
        }
        if (replicationFactor < 0) {
            throw new ViperConfigException(REPLICATION_KEY + " must be positive, got " + replicationFactor);
        }
    }

    /** Reads the settings from {@code config}; see the class comment. */
    public static KafkaSettings from(Map<String, String> config) {
        long timeout = DEFAULT_TIMEOUT_MS;
        int partitions = 1;
        int replication = 0;
        Map<String, String> passthrough = new TreeMap<>();
        String file = config.get(PROPERTIES_FILE_KEY);
        if (file != null) {
            passthrough.putAll(loadProperties(file));
        }
        for (Map.Entry<String, String> e : new TreeMap<>(config).entrySet()) {
            String key = e.getKey();
            String value = e.getValue();
            switch (key) {
                case TIMEOUT_KEY -> timeout = positiveLong(key, value);
                case PARTITIONS_KEY -> partitions = (int) Math.min(Integer.MAX_VALUE, positiveLong(key, value));
                case REPLICATION_KEY -> {
                    long rf = positiveLong(key, value);
                    if (rf > Short.MAX_VALUE) {
                        throw new ViperConfigException(key + " must be at most " + Short.MAX_VALUE + ", got " + value);
                    }
                    replication = (int) rf;
                }
                case PROPERTIES_FILE_KEY -> {
                    // read above, before the kafka.* keys so that they override it
                }
                default -> {
                    if (key.startsWith("viper.kafka.")) {
                        throw new ViperConfigException("unknown setting '" + key + "' (known: " + PROPERTIES_FILE_KEY + ", "
                                + PARTITIONS_KEY + ", " + REPLICATION_KEY + ")");
                    }
                    if (key.startsWith(PASSTHROUGH_PREFIX)) {
                        String name = key.substring(PASSTHROUGH_PREFIX.length());
                        if (name.isEmpty()) {
                            throw new ViperConfigException("setting '" + key + "' names no Kafka client setting (write kafka.<setting>)");
                        }
                        if (value == null) {
                            throw new ViperConfigException("setting '" + key + "' has no value");
                        }
                        passthrough.put(name, value);
                    }
                }
            }
        }
        for (String key : passthrough.keySet()) {
            if (OWNED.contains(key)) {
                throw new ViperConfigException("Kafka setting '" + key + "' (from " + PASSTHROUGH_PREFIX + key + " or "
                        + PROPERTIES_FILE_KEY + ") is set by Viper and cannot be overridden"
                        + (key.equals("bootstrap.servers") ? "; name the brokers in the kafka:// URI" : ""));
            }
            if (!ProducerConfig.configNames().contains(key) && !ConsumerConfig.configNames().contains(key)
                    && !AdminClientConfig.configNames().contains(key)) {
                LOG.log(Level.WARNING, "Kafka setting ''{0}'' is not a known client setting; passing it to every client as it is", key);
            }
        }
        return new KafkaSettings(timeout, partitions, replication, passthrough);
    }

    private static Map<String, String> loadProperties(String file) {
        Path path;
        try {
            path = Path.of(file);
        } catch (RuntimeException e) {
            throw new ViperConfigException(PROPERTIES_FILE_KEY + ": '" + file + "' is not a valid path");
        }
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(path)) {
            p.load(in);
        } catch (NoSuchFileException e) {
            throw new ViperConfigException(PROPERTIES_FILE_KEY + ": Kafka properties file '" + file + "' does not exist");
        } catch (IOException | IllegalArgumentException e) {
            throw new ViperConfigException(PROPERTIES_FILE_KEY + ": cannot read Kafka properties file '" + file + "': " + e.getMessage());
        }
        Map<String, String> out = new TreeMap<>();
        for (String name : p.stringPropertyNames()) {
            out.put(name, p.getProperty(name));
        }
        return out;
    }

    private static long positiveLong(String key, String value) {
        try {
            long v = Long.parseLong(value == null ? "" : value.trim());
            if (v > 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new ViperConfigException(key + " must be a positive integer, got '" + value + "'");
    }

    /** The passthrough settings a client with the given known setting names takes (unknown ones go to all). */
    Properties passthroughFor(Set<String> known) {
        Properties p = new Properties();
        for (Map.Entry<String, String> e : passthrough.entrySet()) {
            boolean knownAnywhere = ProducerConfig.configNames().contains(e.getKey())
                    || ConsumerConfig.configNames().contains(e.getKey()) || AdminClientConfig.configNames().contains(e.getKey());
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
        long request = Math.max(1000, Math.min(30_000, timeoutMs / 2));
        p.setProperty(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(request));
        p.setProperty(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(Math.max(timeoutMs, request)));
        p.setProperty(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(timeoutMs));
        p.putAll(passthroughFor(ProducerConfig.configNames()));
        p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, uri.bootstrapServers());
        p.setProperty(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.setProperty(ProducerConfig.ACKS_CONFIG, "all");
        p.setProperty(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.StringSerializer");
        p.setProperty(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.ByteArraySerializer");
        return p;
    }

    /** Settings of the consumer that follows the topic: no group, no commits, no topic auto-creation. */
    public Properties consumerProperties(KafkaUri uri, String clientId) {
        Properties p = new Properties();
        p.setProperty(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.setProperty(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, Integer.toString(MAX_MESSAGE_BYTES));
        p.setProperty(ConsumerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "5000");
        p.setProperty(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(Math.max(1000, Math.min(timeoutMs, 10_000))));
        p.setProperty(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(Math.max(1000, Math.min(10_000, timeoutMs / 2))));
        p.putAll(passthroughFor(ConsumerConfig.configNames()));
        p.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, uri.bootstrapServers());
        p.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.setProperty(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        p.setProperty(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.setProperty(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        return p;
    }

    /** Settings of the admin client that creates the topic. */
    public Properties adminProperties(KafkaUri uri, String clientId) {
        Properties p = new Properties();
        p.setProperty(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
        p.setProperty(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "5000");
        p.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(timeoutMs));
        p.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(Math.max(1000, Math.min(30_000, timeoutMs / 2))));
        p.putAll(passthroughFor(AdminClientConfig.configNames()));
        p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, uri.bootstrapServers());
        return p;
    }

    /** Largest record the notifier writes and reads (and the topic's {@code max.message.bytes}). */
    public static final int MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
}
