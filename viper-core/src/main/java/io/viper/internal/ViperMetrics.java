package io.viper.internal;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.TimeUnit;

/**
 * The meters Viper records, named once here. Registry owned by the caller (default: Micrometer's
 * global registry, to which the CLI adds a Prometheus registry). Thread-safe.
 *
 * <ul>
 *   <li>{@code viper.producer.stall} (timer, model): copy into staging, the training stall.</li>
 *   <li>{@code viper.producer.published} (counter, model): versions announced.</li>
 *   <li>{@code viper.update.latency} (timer, model, path): publish call to consumer swap.</li>
 *   <li>{@code viper.transfer.bytes} (counter, model, path): bytes moved by consumers.</li>
 *   <li>{@code viper.transfer.fallbacks} (counter, model, path): locations that failed over to the next.</li>
 *   <li>{@code viper.transfer.failures} (counter, model, path, reason): failed transfers.</li>
 *   <li>{@code viper.consumer.selected} (counter, model, path): the path the selector chose first.</li>
 * </ul>
 */
public final class ViperMetrics {
    private final MeterRegistry registry;

    public ViperMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    public MeterRegistry registry() {
        return registry;
    }

    void stall(String model, long nanos) {
        Timer.builder("viper.producer.stall").description("Training stall per checkpoint (copy into staging)")
                .tag("model", model).register(registry).record(nanos, TimeUnit.NANOSECONDS);
    }

    void published(String model) {
        Counter.builder("viper.producer.published").tag("model", model).register(registry).increment();
    }

    void update(String model, String path, double latencyMs) {
        Timer.builder("viper.update.latency").description("Publish call to consumer swap")
                .tag("model", model).tag("path", path).register(registry).record((long) (latencyMs * 1e6), TimeUnit.NANOSECONDS);
    }

    void bytes(String model, String path, long bytes) {
        Counter.builder("viper.transfer.bytes").baseUnit("bytes").tag("model", model).tag("path", path).register(registry).increment(bytes);
    }

    void fallback(String model, String path) {
        Counter.builder("viper.transfer.fallbacks").tag("model", model).tag("path", path).register(registry).increment();
    }

    void failure(String model, String path, String reason) {
        Counter.builder("viper.transfer.failures").tag("model", model).tag("path", path).tag("reason", reason).register(registry).increment();
    }

    void selected(String model, String path) {
        Counter.builder("viper.consumer.selected").tag("model", model).tag("path", path).register(registry).increment();
    }
}
