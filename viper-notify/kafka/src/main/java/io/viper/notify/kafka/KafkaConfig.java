package io.viper.notify.kafka;

import io.viper.config.ConfigKey;
import io.viper.config.ConfigType;
import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The configuration keys of the Kafka notifier, returned by {@link KafkaNotifierProvider#configKeys()}. Besides these:
 * core's {@code viper.notify.timeout.ms} bounds a publish's wait for the acknowledgement and every blocking admin call,
 * and {@code kafka.<setting>} keys pass one Kafka client setting each (overriding the properties file).
 */
public final class KafkaConfig {
    private static final ConfigKey.Declarer KAFKA = ConfigKey.declaredBy("viper-notify-kafka");

    /**
     * A properties file of Kafka client settings (security: {@code security.protocol}, {@code sasl.jaas.config}...).
     */
    public static final ConfigKey<Optional<Path>> PROPERTIES_FILE = KAFKA.key(
            "viper.kafka.properties.file",
            ConfigType.PATH,
            "",
            KafkaConfig::existingFile,
            "A Java properties file of Kafka client settings (security.protocol, sasl.jaas.config, ...);"
                    + " kafka.<setting> keys override it. Empty: none.");
    /** Partitions of a topic the producer creates. */
    public static final ConfigKey<Integer> PARTITIONS = KAFKA.intKey(
            "viper.kafka.partitions",
            1,
            1,
            Integer.MAX_VALUE,
            "Partitions of the manifest topic when a producer creates it.");
    /** Replication factor of a topic the producer creates; 0 stands for {@code auto}. */
    public static final ConfigKey<Integer> REPLICATION_FACTOR = KAFKA.key(
            "viper.kafka.replication.factor",
            ConfigType.INT,
            "auto",
            v -> v.equalsIgnoreCase("auto") ? 0 : ConfigValues.parseInt(v, 1, Short.MAX_VALUE),
            "Replication factor of the manifest topic when a producer creates it; auto: min(3, brokers).");

    /** Every key above, in order. */
    public static final List<ConfigKey<?>> KEYS = List.of(PROPERTIES_FILE, PARTITIONS, REPLICATION_FACTOR);

    private KafkaConfig() {}

    private static Optional<Path> existingFile(String v) {
        if (v.isEmpty()) {
            return Optional.empty();
        }
        Path p;
        try {
            p = Path.of(v);
        } catch (InvalidPathException e) {
            throw new ViperConfigException("not a valid path");
        }
        if (!Files.isRegularFile(p)) {
            throw new ViperConfigException("Kafka properties file '" + v + "' does not exist or is not a regular file");
        }
        return Optional.of(p);
    }
}
