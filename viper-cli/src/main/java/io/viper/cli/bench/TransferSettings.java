package io.viper.cli.bench;

import io.viper.Snapshot;
import io.viper.TransferPath;
import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * What {@link TransferBench} measures, checked when made: the {@code --interval}, and the producer's and consumer's
 * extra configuration ({@link #checkConfig}). Immutable.
 *
 * @param sizes model sizes in bytes, measured in this order
 * @param paths the paths to measure, in this order
 * @param pollBaseline whether {@link TransferPath#PFS}, when measured, is measured with a polling consumer too (the
 *     rows of {@value TransferBench#PFS_POLL}, after every path)
 * @param repeat measured updates per (path, size)
 * @param warmup how long each (path, size) is warmed up (with
 *     {@link TransferBench#MIN_WARMUP}..{@link TransferBench#MAX_WARMUP} updates)
 * @param pollInterval the polling baseline's interval
 * @param dir where the PFS repositories live
 * @param verbose whether the consumer's process logs what it does
 * @param progress told what is being measured, one line at a time
 * @param changed per (path, size) one row per fraction of blocks that change between versions (1: every block, a full
 *     update)
 * @param blockBytes the producer's {@code viper.block.bytes} (0: no blocks, every update a full one)
 * @param producerConfig more of the producer's configuration ({@link #checkConfig})
 * @param consumerConfig more of the consumer's configuration, in its process ({@link #checkConfig})
 * @param interval the pause before each measured update (zero: back to back), up to {@link TransferBench#MAX_INTERVAL}:
 *     updates that come alone, as a training job publishes them, find the data path gone cold
 * @param declareChanges whether the host model's snapshot says which bytes changed since the last publish
 *     ({@link Snapshot.Changes}) instead of leaving the producer to compare
 */
public record TransferSettings(
        List<Long> sizes,
        List<TransferPath> paths,
        boolean pollBaseline,
        int repeat,
        Duration warmup,
        Duration pollInterval,
        Path dir,
        boolean verbose,
        Consumer<String> progress,
        List<Double> changed,
        long blockBytes,
        Map<String, String> producerConfig,
        Map<String, String> consumerConfig,
        Duration interval,
        boolean declareChanges) {
    /** The producer's keys the bench sets itself, per path and size. */
    static final List<String> PRODUCER_KEYS = List.of(
            ViperConfig.NOTIFIER.name(),
            ViperConfig.TRANSPORTS.name(),
            ViperConfig.PFS_ROOT.name(),
            ViperConfig.BLOCK_BYTES.name(),
            ViperConfig.PRODUCER_INLINE_BYTES.name(),
            ViperConfig.STAGING_BUDGET.name());

    /** The consumer's keys the bench sets itself ({@link BenchConsumerMain}). */
    static final List<String> CONSUMER_KEYS = List.of(
            ViperConfig.NOTIFIER.name(),
            ViperConfig.PFS_ROOT.name(),
            ViperConfig.CONSUMER_PATHS.name(),
            ViperConfig.CONSUMER_BUDGET.name(),
            ViperConfig.CONSUMER_DEVICE.name(),
            ViperConfig.CONSUMER_GPU_BUDGET.name());

    /** Every block changes between versions, with the default block size; back to back. */
    public TransferSettings(
            List<Long> sizes,
            List<TransferPath> paths,
            boolean pollBaseline,
            int repeat,
            Duration warmup,
            Duration pollInterval,
            Path dir,
            boolean verbose,
            Consumer<String> progress) {
        this(
                sizes,
                paths,
                pollBaseline,
                repeat,
                warmup,
                pollInterval,
                dir,
                verbose,
                progress,
                List.of(1.0),
                1L << 20,
                Map.of(),
                Map.of(),
                Duration.ZERO,
                false);
    }

    public TransferSettings {
        if (interval.isNegative() || interval.compareTo(TransferBench.MAX_INTERVAL) > 0) {
            throw new ViperConfigException("--interval " + interval.toMillis() + " ms must be between 0 and "
                    + TransferBench.MAX_INTERVAL.toMillis() + " ms");
        }
        producerConfig = Map.copyOf(checkConfig("--producer-config", producerConfig, PRODUCER_KEYS));
        consumerConfig = Map.copyOf(checkConfig("--consumer-config", consumerConfig, CONSUMER_KEYS));
    }

    /**
     * Refuses configuration the bench cannot take from {@code flag}: keys it sets itself ({@code benchKeys}), and
     * unknown keys or bad values, as {@link ViperConfig#of} does.
     *
     * @throws ViperConfigException naming the first problem
     */
    public static Map<String, String> checkConfig(String flag, Map<String, String> config, List<String> benchKeys) {
        for (String k : config.keySet()) {
            if (benchKeys.contains(k)) {
                throw new ViperConfigException(flag + " " + k + ": the bench sets it for each path and size"
                        + (k.equals(ViperConfig.BLOCK_BYTES.name()) ? " (use --block-bytes)" : ""));
            }
        }
        try {
            ViperConfig.of(config);
        } catch (ViperConfigException e) {
            // a value's refusal names the key, not the flag that gave it
            throw new ViperConfigException(flag + ": " + e.getMessage(), e);
        }
        return config;
    }
}
