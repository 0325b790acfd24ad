package io.viper.notify.kafka;

import io.viper.ViperConfig;
import io.viper.auth.ManifestTrust;
import io.viper.config.ConfigKey;
import io.viper.notify.kafka.internal.KafkaNotifier;
import io.viper.notify.kafka.internal.KafkaSettings;
import io.viper.notify.kafka.internal.KafkaUri;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.net.URI;
import java.util.List;
import java.util.Objects;

/**
 * The {@code kafka} notifier provider: {@code kafka://host:port[,host:port...][?topic=viper.models]}.
 *
 * <p>Manifests are records of a compacted topic (default {@code viper.models}), key = model name, value =
 * {@link io.viper.manifest.ManifestCodec} JSON (its {@code format} field versions the encoding). A producer creates the
 * topic when it is missing ({@code cleanup.policy=compact}, replication factor min(3, brokers),
 * {@code min.insync.replicas} max(1, rf - 1)) and writes with idempotence and {@code acks=all}, waiting at most
 * {@link io.viper.ViperConfig#NOTIFY_TIMEOUT_MS viper.notify.timeout.ms} for the acknowledgement. A consumer reads
 * every partition from the start without a consumer group, so that it finds the latest manifest of each model however
 * late it starts, then follows new records; older versions are ignored, malformed records logged and skipped, an
 * unreachable cluster or a missing topic retried with backoff. A small version's bytes
 * ({@code viper.producer.inline.bytes}) travel in its record's {@code viper.data} header, unless they would push the
 * record past the message limit; consumers ignore a header of another size than the manifest's, and compaction keeps
 * the latest record of each model, bytes included.
 *
 * <p>Configuration: the keys of {@link KafkaConfig} ({@code viper.kafka.properties.file} names a properties file of
 * client settings, such as security settings; {@code viper.kafka.partitions} and {@code viper.kafka.replication.factor}
 * shape a topic the producer creates), and {@code kafka.<setting>} keys, each passing one Kafka client setting (for
 * example {@code kafka.security.protocol=SASL_SSL}) and overriding the file. Invalid URIs and settings are refused with
 * a {@link io.viper.errors.ViperConfigException} naming them.
 */
public final class KafkaNotifierProvider implements NotifierProvider {
    /** The URI scheme this provider serves. */
    public static final String SCHEME = "kafka";

    /** Made by {@link java.util.ServiceLoader}. */
    public KafkaNotifierProvider() {}

    @Override
    public String scheme() {
        return SCHEME;
    }

    @Override
    public List<ConfigKey<?>> configKeys() {
        return KafkaConfig.KEYS;
    }

    @Override
    public Notifier open(URI uri, Role role, ViperConfig config) {
        Objects.requireNonNull(role, "role");
        KafkaUri parsed = KafkaUri.parse(uri);
        KafkaSettings settings = KafkaSettings.from(Objects.requireNonNull(config, "config"));
        return new KafkaNotifier(parsed, settings, role, ManifestTrust.fromConfig(config));
    }

    /** The brokers' addresses and query, and the {@code viper.kafka.*} settings. */
    @Override
    public void check(URI uri, ViperConfig config) {
        KafkaUri.parse(uri);
        KafkaSettings.from(Objects.requireNonNull(config, "config"));
    }
}
