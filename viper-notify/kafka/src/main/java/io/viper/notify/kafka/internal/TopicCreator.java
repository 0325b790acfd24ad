package io.viper.notify.kafka.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * Creates the manifest topic if it is missing: {@code cleanup.policy=compact}, replication factor min(3, brokers)
 * unless configured, {@code min.insync.replicas} = max(1, rf - 1). Tolerates a topic that another producer created at
 * the same time, and warns once when an existing topic is not compacted (late consumers could then miss models whose
 * records expired).
 */
public final class TopicCreator {
    private static final System.Logger LOG = System.getLogger("io.viper.notify.kafka");

    private final Admin admin;
    private final KafkaUri uri;
    private final KafkaSettings settings;

    /** Uses {@code admin} (owned by the caller) to manage {@code uri}'s topic. */
    public TopicCreator(Admin admin, KafkaUri uri, KafkaSettings settings) {
        this.admin = admin;
        this.uri = uri;
        this.settings = settings;
    }

    /** The replication factor for a cluster of {@code brokers} brokers: min(3, brokers). */
    public static int replicationFor(int brokers) {
        return Math.max(1, Math.min(3, brokers));
    }

    /** The {@code min.insync.replicas} for replication factor {@code rf}: max(1, rf - 1). */
    public static int minInsyncFor(int rf) {
        return Math.max(1, rf - 1);
    }

    /**
     * Makes sure the topic exists. Throws {@link RetriableViperException} when the cluster does not answer within the
     * timeout, {@link ViperException} when it refuses (authorization, bad settings).
     */
    public void ensureTopic() {
        String topic = uri.topic();
        try {
            int brokers = get(admin.describeCluster().nodes()).size();
            int rf = settings.replicationFactor() > 0 ? settings.replicationFactor() : replicationFor(brokers);
            int minIsr = minInsyncFor(rf);
            NewTopic nt = new NewTopic(topic, settings.partitions(), (short) rf)
                    .configs(Map.of(
                            TopicConfig.CLEANUP_POLICY_CONFIG,
                            TopicConfig.CLEANUP_POLICY_COMPACT,
                            TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG,
                            Integer.toString(minIsr),
                            TopicConfig.MAX_MESSAGE_BYTES_CONFIG,
                            Integer.toString(KafkaSettings.MAX_MESSAGE_BYTES),
                            // roll segments hourly so that compaction can drop superseded manifests
                            TopicConfig.SEGMENT_MS_CONFIG,
                            "3600000",
                            TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG,
                            "0.1"));
            try {
                get(admin.createTopics(List.of(nt)).all());
                LOG.log(
                        Level.INFO,
                        "created Kafka topic {0} on {1}: {2} partition(s), replication factor {3},"
                                + " min.insync.replicas {4}, cleanup.policy=compact",
                        topic,
                        uri.bootstrapServers(),
                        Long.toString(settings.partitions()),
                        Long.toString(rf),
                        Long.toString(minIsr));
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
                LOG.log(Level.DEBUG, "Kafka topic {0} exists already", topic);
                checkCompacted(topic);
            }
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof RetriableException
                    || cause instanceof org.apache.kafka.common.errors.TimeoutException) {
                throw new RetriableViperException(
                        ViperException.Reason.UNAVAILABLE,
                        "Kafka at " + uri.bootstrapServers() + " could not create or check topic " + topic + ": "
                                + cause.getMessage(),
                        cause);
            }
            throw new ViperConfigException(
                    "Kafka at " + uri.bootstrapServers() + " refused to create topic " + topic + ": "
                            + cause.getClass().getSimpleName() + ": " + cause.getMessage(),
                    cause);
        } catch (TimeoutException e) {
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE,
                    "Kafka at " + uri.bootstrapServers() + " did not answer within " + settings.timeoutMs()
                            + " ms while checking topic " + topic,
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ViperTimeoutException("interrupted while checking Kafka topic " + topic, e);
        }
    }

    private void checkCompacted(String topic) throws ExecutionException, TimeoutException, InterruptedException {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config config = get(admin.describeConfigs(List.of(res)).all()).get(res);
        var policy = config == null ? null : config.get(TopicConfig.CLEANUP_POLICY_CONFIG);
        if (policy != null && policy.value() != null && !policy.value().contains(TopicConfig.CLEANUP_POLICY_COMPACT)) {
            LOG.log(
                    Level.WARNING,
                    "Kafka topic {0} has cleanup.policy={1}, not compact: consumers that start late may miss models"
                            + " whose records expired; set cleanup.policy=compact on it",
                    topic,
                    policy.value());
        }
    }

    private <T> T get(org.apache.kafka.common.KafkaFuture<T> f)
            throws ExecutionException, TimeoutException, InterruptedException {
        return f.get(settings.timeoutMs(), TimeUnit.MILLISECONDS);
    }
}
