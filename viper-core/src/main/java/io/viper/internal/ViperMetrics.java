package io.viper.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The meters Viper records, named once here. Registry owned by the caller (default: Micrometer's global registry, to
 * which the CLI adds a Prometheus registry). Thread-safe.
 *
 * <ul>
 *   <li>{@code viper.producer.stall} (timer, model): copy into staging, the training stall.
 *   <li>{@code viper.producer.published} (counter, model): versions announced.
 *   <li>{@code viper.producer.copied.bytes} (counter, model): bytes copied into staging and hashed.
 *   <li>{@code viper.producer.unchanged.bytes} (counter, model): bytes found equal to what the recycled staging buffer
 *       held (viper.producer.staging.compare): neither copied nor hashed.
 *   <li>{@code viper.update.latency} (timer, model, path): publish call to consumer swap.
 *   <li>{@code viper.transfer.bytes} (counter, model, path): bytes moved by consumers.
 *   <li>{@code viper.transfer.reused.bytes} (counter, model, path): bytes of unchanged blocks consumers did not move:
 *       left in place in the receive buffer or copied from the version they held.
 *   <li>{@code viper.transfer.fallbacks} (counter, model, path): locations that failed over to the next.
 *   <li>{@code viper.transfer.failures} (counter, model, path, reason): failed transfers.
 *   <li>{@code viper.consumer.selected} (counter, model, path): the path the selector chose first.
 * </ul>
 */
public final class ViperMetrics {
    private final MeterRegistry registry;
    /** Meters already registered, by name and tags: the data path records without building a meter each time. */
    private final Map<List<String>, Timer> timers = new ConcurrentHashMap<>();

    private final Map<List<String>, Counter> counters = new ConcurrentHashMap<>();

    public ViperMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    public MeterRegistry registry() {
        return registry;
    }

    public void stall(String model, long nanos) {
        timers.computeIfAbsent(
                        List.of("stall", model),
                        k -> Timer.builder("viper.producer.stall")
                                .description("Training stall per checkpoint (copy into staging)")
                                .tag("model", model)
                                .register(registry))
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

    public void update(String model, String path, double latencyMs) {
        timers.computeIfAbsent(
                        List.of("update", model, path),
                        k -> Timer.builder("viper.update.latency")
                                .description("Publish call to consumer swap")
                                .tag("model", model)
                                .tag("path", path)
                                .register(registry))
                .record((long) (latencyMs * 1e6), TimeUnit.NANOSECONDS);
    }

    public void bytes(String model, String path, long bytes) {
        counters.computeIfAbsent(
                        List.of("viper.transfer.bytes", "model", model, "path", path),
                        k -> Counter.builder("viper.transfer.bytes")
                                .baseUnit("bytes")
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

    public void failure(String model, String path, String reason) {
        counter(List.of("viper.transfer.failures", "model", model, "path", path, "reason", reason))
                .increment();
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

    /** The counter named {@code key.get(0)} with the tag pairs that follow. */
    private Counter counter(List<String> key) {
        return counters.computeIfAbsent(key, k -> {
            Counter.Builder b = Counter.builder(k.getFirst());
            for (int i = 1; i + 1 < k.size(); i += 2) {
                b.tag(k.get(i), k.get(i + 1));
            }
            return b.register(registry);
        });
    }
}
