package io.viper;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import io.viper.errors.ViperConfigException;
import io.viper.internal.ViperInstances;
import io.viper.internal.ViperMetrics;
import io.viper.internal.ViperRuntime;
import io.viper.spi.ReceiveAllocator;
import java.net.URI;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The entry point: one instance per process (or per tenant), owning the notifier connection, the transports and the PFS
 * repository that its producers and consumers share.
 *
 * <pre>{@code
 * try (Viper viper = Viper.builder().pfsRoot(Path.of("/pfs/models")).build();
 *      ViperProducer producer = viper.producer("nt3", CheckpointPolicy.every(100))) {
 *     for (long it = 1; it <= iterations; it++) {
 *         double loss = train();
 *         producer.step(it, loss, Snapshot.ofFloats(model.parameters(), model.shapes()));
 *     }
 * }
 * }</pre>
 *
 * <p>Thread-safe. {@link #close()} closes every producer and consumer it created, then the transports and the notifier,
 * in reverse order of opening.
 */
public final class Viper implements AutoCloseable {
    private final ViperRuntime runtime;
    private final ViperInstances instances;

    private Viper(ViperConfig config, MeterRegistry registry, ReceiveAllocator receiveAllocator) {
        this.runtime = new ViperRuntime(config, new ViperMetrics(registry), receiveAllocator);
        this.instances = new ViperInstances(runtime);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A producer for {@code model} that publishes when {@code policy} says so. One per model per instance. */
    public ViperProducer producer(String model, CheckpointPolicy policy) {
        return instances.producer(model, policy);
    }

    /** A consumer following {@code model}. */
    public ViperConsumer consumer(String model) {
        return instances.consumer(model);
    }

    /** Where this instance's meters are registered ({@link Builder#meterRegistry}). */
    public MeterRegistry meterRegistry() {
        return runtime.metrics().registry();
    }

    /**
     * The notifier address consumers in other processes use: with {@code embedded://host:0}, the port the producer's
     * broker bound (known once a producer exists).
     */
    public URI notifierUri() {
        return runtime.notifierUri();
    }

    public ViperConfig config() {
        return runtime.config();
    }

    /**
     * Checks now, without reaching the network, what producers and consumers of this instance open on first use: the
     * notifier's address (an installed scheme, a well-formed address for it) and the PFS repository
     * ({@code viper.pfs.root}, opened here). A long-running process (the agent) calls it at start, so that a bad
     * setting is refused before it serves anyone.
     *
     * @throws io.viper.errors.ViperConfigException naming the setting and what is wrong
     */
    public void checkSettings() {
        runtime.checkSettings();
    }

    @Override
    public void close() {
        instances.close();
        runtime.close();
    }

    /**
     * Builds a {@link Viper}: typed setters for the common settings, {@link #config(String, String)} for any key of
     * {@link ViperConfig} or passthrough keys (e.g. {@code kafka.*}). Validation happens in {@link #build()}.
     */
    public static final class Builder {
        private final Map<String, String> values = new LinkedHashMap<>();
        private MeterRegistry registry = Metrics.globalRegistry;
        private ReceiveAllocator receiveAllocator = ReceiveAllocator.offHeap();

        private Builder() {}

        /** {@code embedded://host:port} (default {@code embedded://127.0.0.1:0}) or {@code kafka://host:port}. */
        public Builder notifier(String uri) {
            return config(ViperConfig.NOTIFIER.name(), uri);
        }

        public Builder notifier(URI uri) {
            return notifier(uri == null ? null : uri.toString()); // null is refused as for any key
        }

        /** Root of the PFS repository; producers flush there, consumers fall back to it. */
        public Builder pfsRoot(Path root) {
            return config(
                    ViperConfig.PFS_ROOT.name(),
                    Objects.requireNonNull(root, "root").toString());
        }

        /** Transports producers serve on, e.g. {@code "ucx://127.0.0.1:0", "tcp://0.0.0.0:7000"}. */
        public Builder transports(String... bindUris) {
            return config(ViperConfig.TRANSPORTS.name(), joined(bindUris));
        }

        public Builder stagingBudget(long bytes) {
            return config(ViperConfig.STAGING_BUDGET.name(), Long.toString(bytes));
        }

        public Builder consumerHostBudget(long bytes) {
            return config(ViperConfig.CONSUMER_BUDGET.name(), Long.toString(bytes));
        }

        /**
         * Host memory all producers and consumers of the instance take together
         * ({@code viper.memory.host.budget.bytes}).
         */
        public Builder hostMemoryBudget(long bytes) {
            return config(ViperConfig.MEMORY_HOST_BUDGET.name(), Long.toString(bytes));
        }

        /** Transport schemes consumers may use ({@code ucx}, {@code tcp}, {@code file}); none given: all. */
        public Builder consumerPaths(String... schemes) {
            return config(ViperConfig.CONSUMER_PATHS.name(), joined(schemes));
        }

        /** The list as a comma-separated value; null when it is null, which {@link #config(String, String)} refuses. */
        private static String joined(String[] values) {
            return values == null ? null : String.join(",", values);
        }

        /** Any configuration key; see {@link ViperConfig#keys()}. */
        public Builder config(String key, String value) {
            if (key == null || value == null) {
                throw new ViperConfigException("configuration key and value must not be null (" + key + ")");
            }
            values.put(key, value);
            return this;
        }

        public Builder config(Map<String, String> all) {
            all.forEach(this::config);
            return this;
        }

        /** Where meters are registered (default: Micrometer's global registry). */
        public Builder meterRegistry(MeterRegistry r) {
            this.registry = Objects.requireNonNull(r, "registry");
            return this;
        }

        /**
         * Where consumers' host receive buffers come from (default: {@link ReceiveAllocator#offHeap()}), for a process
         * that shares the models it receives with other processes.
         */
        public Builder receiveAllocator(ReceiveAllocator allocator) {
            this.receiveAllocator = Objects.requireNonNull(allocator, "allocator");
            return this;
        }

        /** Validates the configuration and creates the instance (nothing is opened until first use). */
        public Viper build() {
            return new Viper(ViperConfig.of(values), registry, receiveAllocator);
        }
    }
}
