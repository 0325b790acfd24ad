package io.viper.internal.consumer;

import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.TensorSet;
import io.viper.ViperConfig;
import io.viper.ViperConsumer;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.errors.ViperTimeoutException;
import io.viper.internal.ConsumerMeters;
import io.viper.internal.ViperMetrics;
import io.viper.internal.ViperRuntime;
import io.viper.internal.memory.MemoryBudget;
import io.viper.manifest.Manifest;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * The consumer of one model: wires the parts of the data path, in the order a manifest passes them. The notifier
 * subscription hands each manifest to the {@link ManifestTracker}; the {@link Fetcher}'s thread takes the newest, tries
 * its locations in the order the {@link PathSelector} gives, with the loader for each ({@link InlineLoader} from the
 * bytes its announcement carried, {@link DeviceLoader} into GPU memory, {@link MappedLoader} for the PFS,
 * {@link HostLoader} into one of the {@link ReceiveSlots}), each checking every tensor with the {@link Verifier}; the
 * {@link ServingModel} swaps the verified version in. Versions only move forward; a failed or corrupt transfer leaves
 * the current version serving and falls back to the next location, then retries with backoff. A refusal that trying
 * again cannot change, by the notifier's broker or by the producers
 * ({@link io.viper.spi.TransportClient#refusesConsumer}), stops the consumer following the model
 * ({@link ServingModel#stop}, which holds why).
 *
 * <p>Thread-safe: inference threads take leases, the fetch thread loads, and any thread may close.
 */
public final class ConsumerImpl implements ViperConsumer {
    private static final System.Logger LOG = System.getLogger(ConsumerImpl.class.getName());

    private final ViperRuntime rt;
    private final String model;
    private final Runnable onClose;
    private final ManifestTracker tracker;
    private final ReceiveSlots slots;
    private final DeviceLoader device;
    private final ServingModel serving;
    private final Fetcher fetcher;
    private final Notifier.Subscription subscription;
    private final ConsumerMeters meters;
    private final AtomicBoolean closed = new AtomicBoolean();

    public ConsumerImpl(ViperRuntime rt, String model, Runnable onClose) {
        this.rt = rt;
        this.model = Manifest.validateModelName(model);
        this.onClose = onClose;
        ViperConfig c = rt.config();
        checkPaths(c);
        Verifier verifier = new Verifier(model, rt.hashPool(), rt.hashWorkers());
        MemoryBudget hostBudget = rt.hostMemory()
                .child("consumer " + model, ViperConfig.CONSUMER_BUDGET.name(), c.get(ViperConfig.CONSUMER_BUDGET));
        this.slots = new ReceiveSlots(model, hostBudget, c.get(ViperConfig.LEASE_WAIT_MS), rt.receiveAllocator());
        this.serving = new ServingModel(model, rt.metrics());
        ViperMetrics.warmUpdateTimers(rt.hashPool()); // idle until the first load arrives
        this.device = new DeviceLoader(model, c, rt.gpuMemory(), verifier, serving::retainCurrent);
        this.fetcher = new Fetcher(model, rt, c.get(ViperConfig.CONSUMER_AUTOLOAD), serving, slots, device, verifier);
        this.tracker = fetcher.tracker();
        rt.repository().flatMap(r -> r.latest(model)).ifPresent(tracker::offer);
        // A consumer serving on the GPU fetches over its GPU paths rather than copy from the host.
        boolean inline = c.get(ViperConfig.CONSUMER_INLINE) && !device.servesOnGpu();
        Notifier notifier = rt.notifier(NotifierProvider.Role.CONSUMER);
        this.subscription = notifier.subscribe(model, new Notifier.ManifestListener() {
            @Override
            public void onManifest(Manifest manifest) {
                tracker.offer(manifest);
            }

            @Override
            public void onManifest(Manifest manifest, MemorySegment data) {
                tracker.offer(manifest, inline ? data : null);
            }

            /*
             * The tracker wakes the fetch thread and returns, or has the fetcher swap in a version of at
             * most {@code viper.producer.inline.bytes} its announcement carried (a copy and a check of a
             * few KiB); the application's manifest and update listeners must not block either.
             */
            @Override
            public boolean quick() {
                return true;
            }

            @Override
            public void onProblem(String problem) {
                // The notifier logs its own problems; keep a trace here for debugging.
                LOG.log(System.Logger.Level.DEBUG, "consumer {0}: notifier: {1}", model, problem);
            }

            @Override
            public void onFailure(ViperException failure) {
                serving.stop(failure);
            }
        });
        // Registered last: nothing after it can fail and leave gauges of a consumer that never opened.
        this.meters = rt.metrics()
                .consumerOpened(
                        model,
                        serving::version,
                        () -> tracker.announcedAfter(serving.version()),
                        serving::lastSwapNanos);
        fetcher.start();
        LOG.log(System.Logger.Level.INFO, "consumer {0}: following {1}", model, notifier.uri());
    }

    /**
     * Refuses paths that can reach no version: file:// alone without a PFS of its own, which is the only place a
     * consumer reads it from.
     */
    private static void checkPaths(ViperConfig c) {
        if (c.get(ViperConfig.CONSUMER_PATHS).equals(List.of("file"))
                && c.get(ViperConfig.PFS_ROOT).isEmpty()) {
            throw new ViperConfigException(
                    ViperConfig.CONSUMER_PATHS.name() + " is file only, but " + ViperConfig.PFS_ROOT.name()
                            + " is not set: a consumer reads file:// locations only from its own PFS, so it could"
                            + " load no version");
        }
    }

    @Override
    public String model() {
        return model;
    }

    @Override
    public ModelLease current() {
        return currentIfAny().orElseThrow(() -> new ViperNotFoundException("consumer " + model + " has no model yet"));
    }

    @Override
    public Optional<ModelLease> currentIfAny() {
        // Closed, it serves nothing: "no model yet" would send the caller waiting for one.
        ensureOpen();
        return serving.lease();
    }

    @Override
    public long version() {
        return serving.version();
    }

    @Override
    public void onManifest(Consumer<Manifest> listener) {
        tracker.onManifest(listener);
    }

    @Override
    public void onUpdate(Consumer<ModelUpdate> listener) {
        serving.onUpdate(listener);
    }

    @Override
    public void onFailure(Consumer<ViperException> listener) {
        serving.onFailure(Objects.requireNonNull(listener, "listener"));
    }

    @Override
    public long awaitVersion(long v, Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        try {
            return serving.awaitVersion(v, timeout);
        } catch (ViperTimeoutException e) {
            // Say why when a version announced failed to load (its producer gone, say), with that failure as the cause.
            RuntimeException why = fetcher.behind().orElseThrow(() -> e);
            throw new ViperTimeoutException(
                    e.getMessage() + "; the newest version announced is not loaded: " + why.getMessage(), why);
        }
    }

    @Override
    public TensorSet fetch(long v, Set<String> names) {
        Objects.requireNonNull(names, "names");
        ensureOpen();
        Manifest m = tracker.find(v)
                .or(() -> rt.repository().flatMap(r -> r.find(model, v)))
                .orElseThrow(() ->
                        new ViperNotFoundException("model " + model + " v" + v + " is not known to this consumer"));
        return fetcher.fetchTensors(m, names);
    }

    private void ensureOpen() {
        if (closed.get()) {
            throw new ViperClosedException("consumer " + model + " is closed");
        }
    }

    /**
     * Stops following the model: no more swaps, the fetch thread stopped, the serving version released. Versions still
     * leased stay readable until their leases close (a warning names them).
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        meters.close();
        serving.close();
        subscription.close();
        fetcher.close();
        slots.close();
        device.close();
        onClose.run();
    }
}
