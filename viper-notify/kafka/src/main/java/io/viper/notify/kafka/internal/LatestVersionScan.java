package io.viper.notify.kafka.internal;

import io.viper.auth.ManifestTrust;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * Reads the manifest topic from the beginning to its current end once and returns the newest version of one model in
 * it, for a starting producer. The topic is compacted, so this reads about one record per model. Records that do not
 * decode, or name another model than their key, are skipped. Runs on the caller's thread with a consumer of its own,
 * which it closes.
 */
final class LatestVersionScan {
    private static final System.Logger LOG = System.getLogger("io.viper.notify.kafka");

    private LatestVersionScan() {}

    /**
     * The newest version of {@code model} in the topic (0: none or no topic); empty when the cluster did not answer
     * within {@code timeoutMs}.
     */
    static OptionalLong newest(Consumer<byte[], byte[]> consumer, KafkaUri uri, String model, long timeoutMs) {
        return newest(consumer, uri, model, timeoutMs, ManifestTrust.of(Optional.empty(), Manifest.MAX_VERSION));
    }

    /**
     * As above, counting only the records {@code trust} lets through: a forged record (unsigned, or numbered far ahead)
     * that compaction keeps for good cannot push producers to the last version.
     */
    static OptionalLong newest(
            Consumer<byte[], byte[]> consumer, KafkaUri uri, String model, long timeoutMs, ManifestTrust trust) {
        byte[] key = model.getBytes(StandardCharsets.UTF_8);
        long start = System.nanoTime();
        long budget = TimeUnit.MILLISECONDS.toNanos(timeoutMs); // saturates: the key may be Long.MAX_VALUE
        try (consumer) {
            List<PartitionInfo> infos = consumer.partitionsFor(uri.topic(), Duration.ofMillis(timeoutMs));
            if (infos == null || infos.isEmpty()) {
                return OptionalLong.of(0);
            }
            List<TopicPartition> partitions = infos.stream()
                    .map(i -> new TopicPartition(i.topic(), i.partition()))
                    .toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofMillis(timeoutMs));
            long newest = 0;
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                if (System.nanoTime() - start > budget) {
                    LOG.log(
                            Level.WARNING,
                            "reading the latest version of " + model + " from " + uri + " took longer than " + timeoutMs
                                    + " ms");
                    return OptionalLong.empty();
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    if (r.key() == null || r.value() == null || !Arrays.equals(r.key(), key)) {
                        continue;
                    }
                    try {
                        String where = uri.topic() + "/" + r.partition() + "@" + r.offset();
                        Manifest m = ManifestCodec.decode(trust.open(r.value(), where), where);
                        if (m.model().equals(model)) {
                            trust.checkVersion(model, newest, m.version(), where);
                            newest = Math.max(newest, m.version());
                        }
                    } catch (RuntimeException e) {
                        LOG.log(Level.WARNING, "skipped while reading the latest version: {0}", e.getMessage());
                    }
                }
            }
            return OptionalLong.of(newest);
        } catch (KafkaException e) {
            LOG.log(
                    Level.WARNING,
                    "cannot read the latest version of " + model + " from " + uri + ": " + e.getMessage());
            return OptionalLong.empty();
        }
    }
}
