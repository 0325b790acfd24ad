package io.viper.internal;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * One consumer's gauges, per model: the version it serves ({@code viper.consumer.version}), how many versions newer
 * than it were announced ({@code viper.consumer.versions.behind}, of the last 16) and the seconds since its last swap
 * ({@code viper.consumer.swap.age}, NaN before the first). Read on each scrape, on the scraping thread, from suppliers
 * that are safe to call from any thread. {@link #close()} (with the consumer) removes them: a consumer of the same
 * model opened later registers its own.
 */
public final class ConsumerMeters implements AutoCloseable {
    /** Counter: failed tries at a location, any path and reason ({@code viper.transfer.failures} breaks them down). */
    static final String FAILURES = "viper.consumer.failures";

    static final String FAILURES_HELP =
            "Failed tries at a location, of any path and reason (viper_transfer_failures_total breaks them down)";
    /** Counter: versions no location delivered; the consumer retries after a backoff. */
    static final String LOAD_FAILURES = "viper.consumer.load.failures";

    static final String LOAD_FAILURES_HELP =
            "Versions that no location delivered, so that the consumer retries them after a backoff";

    private final MeterRegistry registry;
    private final List<Meter> gauges;

    ConsumerMeters(
            MeterRegistry registry,
            String model,
            LongSupplier served,
            LongSupplier behind,
            LongSupplier lastSwapNanos) {
        this.registry = registry;
        // Strong references: the suppliers are the consumer's, alive until close() removes the gauges.
        this.gauges = List.of(
                Gauge.builder("viper.consumer.version", served, s -> (double) s.getAsLong())
                        .description("The version the consumer serves (0 before the first)")
                        .tag("model", model)
                        .strongReference(true)
                        .register(registry),
                Gauge.builder("viper.consumer.versions.behind", behind, b -> (double) b.getAsLong())
                        .description("Versions announced that are newer than the one the consumer serves")
                        .tag("model", model)
                        .strongReference(true)
                        .register(registry),
                Gauge.builder("viper.consumer.swap.age", () -> secondsSince(lastSwapNanos.getAsLong()))
                        .description("Seconds since the consumer last swapped a version in (NaN before the first)")
                        .baseUnit("seconds")
                        .tag("model", model)
                        .strongReference(true)
                        .register(registry));
    }

    private static double secondsSince(long nanos) {
        return nanos == 0 ? Double.NaN : (System.nanoTime() - nanos) / 1e9;
    }

    @Override
    public void close() {
        gauges.forEach(registry::remove);
    }
}
