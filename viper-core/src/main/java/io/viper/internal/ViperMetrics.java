package io.viper.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

/**
 * The meters Viper records, named once here. Registry owned by the caller (default: Micrometer's global registry, to
 * which the CLI adds a Prometheus registry). Thread-safe. Every meter has a description (Prometheus' HELP); every timer
 * publishes histogram buckets, so that a dashboard computes p99 over any window ({@code histogram_quantile}), where a
 * summary's {@code _max} decays to 0 once its window passed.
 *
 * <ul>
 *   <li>{@code viper.producer.stall} (timer, model): copy into staging, the training stall.
 *   <li>{@code viper.producer.published} (counter, model): versions announced; 0 from the producer's start.
 *   <li>{@code viper.producer.copied.bytes} (counter, model): bytes copied into staging and hashed.
 *   <li>{@code viper.producer.unchanged.bytes} (counter, model): bytes found equal to what the recycled staging buffer
 *       held (viper.producer.staging.compare): neither copied nor hashed.
 *   <li>{@code viper.update.latency} (timer, model, path): publish call to consumer swap.
 *   <li>{@code viper.update.transfer} (timer, model, path): the consumer's transfer of a version, start to last byte.
 *   <li>{@code viper.update.verify} (timer, model, path): last byte to swap (hash check of what is left, the swap).
 *   <li>{@code viper.transfer.bytes} (counter, model, path): bytes moved by consumers.
 *   <li>{@code viper.transfer.reused.bytes} (counter, model, path): bytes of unchanged blocks consumers did not move:
 *       left in place in the receive buffer or copied from the version they held.
 *   <li>{@code viper.transfer.fallbacks} (counter, model, path): locations that failed over to the next.
 *   <li>{@code viper.transfer.failures} (counter, model, path, reason): failed transfers.
 *   <li>{@code viper.consumer.selected} (counter, model, path): the path the selector chose first.
 *   <li>{@code viper.fleet.read.bytes} (counter, model, source), {@code viper.fleet.served.bytes} (counter, model,
 *       role), {@code viper.fleet.relays.dropped} (counter, model): the fleet's reads by source, bytes served, relays
 *       dropped.
 *   <li>The per-model consumer gauges and failure totals of {@link ConsumerMeters}.
 * </ul>
 */
public final class ViperMetrics {
    /**
     * The histograms' bucket bounds, 0.1 ms to 10 min in 1-2.5-5 steps: fixed, so that every process's buckets add up
     * across a fleet, and 21 of them rather than the ~70 of Micrometer's percentile histogram.
     */
    private static final Duration[] BUCKETS = buckets();
    /** Whether {@link #warmUpdateTimers} ran (or is running) in this process. */
    private static final AtomicBoolean UPDATE_TIMERS_WARMED = new AtomicBoolean();

    private static final Map<String, String> COUNTER_HELP = Map.of(
            "viper.producer.published",
            "Versions the producer announced",
            "viper.transfer.fallbacks",
            "Locations a consumer tried that failed, so that it went on to the next one",
            "viper.transfer.failures",
            "Failed transfers of a version from one location, by path and reason",
            "viper.consumer.selected",
            "The path a consumer's selector chose first for a version",
            "viper.fleet.read.bytes",
            "Bytes a consumer read, by source: the producer, a relay or the PFS",
            "viper.fleet.served.bytes",
            "Bytes this process served to readers, as the producer or as a relay",
            "viper.fleet.relays.dropped",
            "Relays dropped as a source: they failed a reader or served bytes that did not verify",
            ConsumerMeters.FAILURES,
            ConsumerMeters.FAILURES_HELP,
            ConsumerMeters.LOAD_FAILURES,
            ConsumerMeters.LOAD_FAILURES_HELP);

    private final MeterRegistry registry;
    /** Meters already registered, by name and tags: the data path records without building a meter each time. */
    private final Map<List<String>, Timer> timers = new ConcurrentHashMap<>();

    private final Map<List<String>, Counter> counters = new ConcurrentHashMap<>();

    public ViperMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    /**
     * Loads and runs the code of a histogram timer like the update timers, in a registry of its own on
     * {@code executor}, so that a consumer's first swap does not: the first {@link #update} of a process took 35-48 ms
     * of the swap (a cold 1 GiB load took 0.5-1.2 s), the later ones below 1 ms. Nothing is registered in
     * {@link #registry()}. Once per process (the code, once loaded, stays); best effort.
     */
    public static void warmUpdateTimers(Executor executor) {
        if (!UPDATE_TIMERS_WARMED.compareAndSet(false, true)) {
            return;
        }
        try {
            executor.execute(() -> {
                SimpleMeterRegistry scratch = new SimpleMeterRegistry();
                Timer.builder("viper.warm")
                        .serviceLevelObjectives(BUCKETS)
                        .register(scratch)
                        .record(1, TimeUnit.MILLISECONDS);
                scratch.close();
            });
        } catch (RejectedExecutionException e) {
            UPDATE_TIMERS_WARMED.set(false); // shutting down: the next consumer's runtime may warm them
        }
    }

    public MeterRegistry registry() {
        return registry;
    }

    /**
     * A producer of {@code model} opened: its published counter is there, at 0, before the first version, so that a
     * rate over it reads 0 rather than nothing.
     */
    public void producerOpened(String model) {
        counter(List.of("viper.producer.published", "model", model));
    }

    /**
     * A consumer of {@code model} opened: registers its gauges (read from the suppliers on each scrape) and its failure
     * totals at 0. Close the result with the consumer: it removes the gauges, which read a closed consumer.
     *
     * @param served the version serving, 0 before the first
     * @param behind how many versions newer than the one served were announced
     * @param lastSwapNanos {@link System#nanoTime()} of the last swap, 0 before the first
     */
    public ConsumerMeters consumerOpened(
            String model, LongSupplier served, LongSupplier behind, LongSupplier lastSwapNanos) {
        counter(List.of(ConsumerMeters.FAILURES, "model", model));
        counter(List.of(ConsumerMeters.LOAD_FAILURES, "model", model));
        return new ConsumerMeters(registry, model, served, behind, lastSwapNanos);
    }

    public void stall(String model, long nanos) {
        timer("viper.producer.stall", "Training stall per checkpoint (copy into staging)", model, null)
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    /**
     * One version staged: bytes copied into staging (and hashed), and bytes found unchanged in the buffer (neither).
     */
    public void staged(String model, long copiedBytes, long unchangedBytes) {
        counters.computeIfAbsent(
                        List.of("viper.producer.copied.bytes", "model", model),
                        k -> Counter.builder("viper.producer.copied.bytes")
                                .baseUnit("bytes")
                                .description("Bytes copied into staging and hashed")
                                .tag("model", model)
                                .register(registry))
                .increment((double) copiedBytes);
        counters.computeIfAbsent(
                        List.of("viper.producer.unchanged.bytes", "model", model),
                        k -> Counter.builder("viper.producer.unchanged.bytes")
                                .baseUnit("bytes")
                                .description(
                                        "Bytes found equal to what a recycled staging buffer held: neither copied nor"
                                                + " hashed")
                                .tag("model", model)
                                .register(registry))
                .increment((double) unchangedBytes);
    }

    public void published(String model) {
        counter(List.of("viper.producer.published", "model", model)).increment();
    }

    /**
     * A consumer swapped a version in from {@code path}: the update's latency (publish call to swap), its transfer and
     * its verification, each in milliseconds.
     */
    public void update(String model, String path, double latencyMs, double transferMs, double verifyMs) {
        timer("viper.update.latency", "Publish call to consumer swap", model, path)
                .record(nanos(latencyMs), TimeUnit.NANOSECONDS);
        timer("viper.update.transfer", "A consumer's transfer of a version, start to last byte", model, path)
                .record(nanos(transferMs), TimeUnit.NANOSECONDS);
        timer(
                        "viper.update.verify",
                        "A consumer's last byte to swap: the hash check of what was left, then the swap",
                        model,
                        path)
                .record(nanos(verifyMs), TimeUnit.NANOSECONDS);
    }

    public void bytes(String model, String path, long bytes) {
        counters.computeIfAbsent(
                        List.of("viper.transfer.bytes", "model", model, "path", path),
                        k -> Counter.builder("viper.transfer.bytes")
                                .baseUnit("bytes")
                                .description("Bytes consumers moved, by path")
                                .tag("model", model)
                                .tag("path", path)
                                .register(registry))
                .increment((double) bytes);
    }

    public void reused(String model, String path, long bytes) {
        counters.computeIfAbsent(
                        List.of("viper.transfer.reused.bytes", "model", model, "path", path),
                        k -> Counter.builder("viper.transfer.reused.bytes")
                                .baseUnit("bytes")
                                .description(
                                        "Bytes of unchanged blocks a consumer did not move: left in place or copied"
                                                + " from the version it held")
                                .tag("model", model)
                                .tag("path", path)
                                .register(registry))
                .increment((double) bytes);
    }

    public void fallback(String model, String path) {
        counter(List.of("viper.transfer.fallbacks", "model", model, "path", path))
                .increment();
    }

    /** A try at one location failed: counted by path and reason, and in the model's total. */
    public void failure(String model, String path, String reason) {
        counter(List.of("viper.transfer.failures", "model", model, "path", path, "reason", reason))
                .increment();
        counter(List.of(ConsumerMeters.FAILURES, "model", model)).increment();
    }

    /** No location delivered a version: the consumer retries it after a backoff. */
    public void loadFailed(String model) {
        counter(List.of(ConsumerMeters.LOAD_FAILURES, "model", model)).increment();
    }

    public void selected(String model, String path) {
        counter(List.of("viper.consumer.selected", "model", model, "path", path))
                .increment();
    }

    /**
     * Bytes a consumer read for {@code model} by source ({@code producer}, {@code relay} or {@code pfs}): the fleet's
     * split of {@code viper.transfer.bytes}.
     */
    public void bytesFrom(String model, String source, long bytes) {
        counter(List.of("viper.fleet.read.bytes", "model", model, "source", source))
                .increment((double) bytes);
    }

    /** Bytes this process served to readers of {@code model}: as the producer ({@code role} producer) or as a relay. */
    public void served(String model, String role, long bytes) {
        counter(List.of("viper.fleet.served.bytes", "model", model, "role", role))
                .increment((double) bytes);
    }

    /** A relay dropped as a source of {@code model}: it failed a reader or served bytes that did not verify. */
    public void relayDropped(String model) {
        counter(List.of("viper.fleet.relays.dropped", "model", model)).increment();
    }

    private static Duration[] buckets() {
        long[] micros = {
            100,
            250,
            500,
            1_000,
            2_500,
            5_000,
            10_000,
            25_000,
            50_000,
            100_000,
            250_000,
            500_000,
            1_000_000,
            2_500_000,
            5_000_000,
            10_000_000,
            30_000_000,
            60_000_000,
            120_000_000,
            300_000_000,
            600_000_000
        };
        Duration[] d = new Duration[micros.length];
        for (int i = 0; i < micros.length; i++) {
            d[i] = Duration.ofNanos(micros[i] * 1000);
        }
        return d;
    }

    private static long nanos(double ms) {
        return (long) (ms * 1e6);
    }

    /** The timer {@code name} of {@code model} (and {@code path}, when not null), with histogram buckets. */
    private Timer timer(String name, String help, String model, String path) {
        List<String> key = path == null ? List.of(name, model) : List.of(name, model, path);
        return timers.computeIfAbsent(key, k -> {
            Timer.Builder b = Timer.builder(name)
                    .description(help)
                    .serviceLevelObjectives(BUCKETS)
                    .tag("model", model);
            if (path != null) {
                b.tag("path", path);
            }
            return b.register(registry);
        });
    }

    /** The counter named {@code key.get(0)} with the tag pairs that follow. */
    private Counter counter(List<String> key) {
        return counters.computeIfAbsent(key, k -> {
            Counter.Builder b = Counter.builder(k.getFirst()).description(COUNTER_HELP.get(k.getFirst()));
            for (int i = 1; i + 1 < k.size(); i += 2) {
                b.tag(k.get(i), k.get(i + 1));
            }
            return b.register(registry);
        });
    }
}
