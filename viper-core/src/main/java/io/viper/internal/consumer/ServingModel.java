package io.viper.internal.consumer;

import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import io.viper.internal.ViperMetrics;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * The version a consumer serves, and the swap to a newer one: the last step of the data path. The swap is one atomic
 * reference change, so a request sees the old version or the new one, never a mix; the old version's memory is handed
 * back when its last lease closes (the serving slot's reference is dropped on a thread of its own,
 * {@code viper-release-*}, after the listeners).
 *
 * <p>Threads: inference threads take leases ({@link #lease()}); the fetch thread swaps ({@link #swap}) and then runs
 * the update listeners, or the notifier's thread does for a version its announcement carried (the {@link Fetcher}'s
 * lock lets one of them at a time); any thread may wait in {@link #awaitVersion}. {@link #stop} runs on the notifier's
 * thread (its broker refused this consumer) or the fetch thread (the producers did). {@link #close()} runs on the
 * thread closing the consumer and logs a warning naming each version still leased (its memory is freed when that lease
 * closes). Thread-safe.
 */
final class ServingModel implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ServingModel.class.getName());

    private final String model;
    private final ViperMetrics metrics;
    private final AtomicReference<LoadedModel> current = new AtomicReference<>();
    private final Listeners<ModelUpdate> listeners;
    private final Listeners<ViperException> failureListeners;
    private final Object monitor = new Object();
    /** Versions swapped in whose memory may still be referenced (pruned once released). */
    private final List<LoadedModel> live = new ArrayList<>();

    private long completedVersion;
    private boolean closed;
    /** {@link System#nanoTime()} of the last swap, 0 before the first (a gauge reads it). */
    private volatile long lastSwapNanos;
    /**
     * Why the consumer stopped following the model (a refusal trying again cannot change), or null: the one record of
     * it, guarded by {@link #monitor}.
     */
    private ViperException stopped;
    /** Releases replaced host versions, in order, off the swapping thread. */
    private final ExecutorService releaser;

    ServingModel(String model, ViperMetrics metrics) {
        this.model = model;
        this.metrics = metrics;
        this.listeners = new Listeners<>("consumer " + model + ": update listener");
        this.failureListeners = new Listeners<>("consumer " + model + ": failure listener");
        this.releaser = Executors.newSingleThreadExecutor(
                Thread.ofPlatform().daemon().name("viper-release-" + model).factory());
    }

    /** The version serving now, 0 before the first. */
    long version() {
        LoadedModel m = current.get();
        return m == null ? 0 : m.version();
    }

    /** {@link System#nanoTime()} of the last swap, 0 before the first. */
    long lastSwapNanos() {
        return lastSwapNanos;
    }

    /** A lease on the version serving now, or empty before the first one arrived. */
    Optional<ModelLease> lease() {
        return Optional.ofNullable(retainCurrent()).map(LoadedModel::lease);
    }

    /**
     * The version serving now with a reference for the caller, who releases it ({@link LoadedModel#releaseRef}); null
     * before the first one arrived. A delta load reads its base through it, so that the base cannot be recycled under
     * the copy.
     */
    LoadedModel retainCurrent() {
        while (true) {
            LoadedModel m = current.get();
            if (m == null) {
                return null;
            }
            if (m.tryRetain()) {
                return m;
            }
            // Lost a race with a swap that released it: read the newer one.
        }
    }

    void onUpdate(Consumer<ModelUpdate> listener) {
        listeners.add(listener);
    }

    /**
     * Serves {@code loaded} (verified) instead of the current version and tells the listeners. One thread at a time,
     * holding the {@link Fetcher}'s loading lock. After {@link #close()} the version is released instead.
     *
     * @param startedNs {@link System#nanoTime()} when the load from {@code loc} began
     * @param fallbacks locations that failed before {@code loc}
     */
    void swap(Manifest m, Loader.Loaded loaded, Location loc, long startedNs, int fallbacks) {
        long swappedNs = System.nanoTime();
        LoadedModel old;
        synchronized (monitor) {
            if (closed) {
                old = loaded.model();
            } else {
                old = current.getAndSet(loaded.model());
                live.removeIf(l -> l.references() <= 0);
                live.add(loaded.model());
            }
        }
        if (old == loaded.model()) {
            old.releaseRef(); // the consumer closed during the load: nothing will serve it
            return;
        }
        lastSwapNanos = swappedNs == 0 ? 1 : swappedNs;
        double latencyMs = m.millisSincePublished();
        ModelUpdate u = new ModelUpdate(
                model,
                m.version(),
                old == null ? 0 : old.version(),
                loc,
                loaded.bytesMoved(),
                latencyMs,
                (loaded.transferDoneNs() - startedNs) / 1e6,
                (swappedNs - loaded.transferDoneNs()) / 1e6,
                fallbacks,
                loaded.bytesReused(),
                loaded.bytesFromRelays());
        metrics.update(model, loc.scheme(), latencyMs, u.transferMs(), u.verifyMs());
        listeners.tell(u);
        if (LOG.isLoggable(System.Logger.Level.INFO)) {
            LOG.log(
                    System.Logger.Level.INFO,
                    "consumer {0}: now serving v{1} from {2} ({3} bytes moved, {6} reused, transfer {4} ms, verify"
                            + " {5} ms)",
                    model,
                    Long.toString(m.version()),
                    loc.uri(),
                    Long.toString(loaded.bytesMoved()),
                    String.format(Locale.ROOT, "%.1f", u.transferMs()),
                    String.format(Locale.ROOT, "%.1f", u.verifyMs()),
                    Long.toString(loaded.bytesReused()));
        }
        // Waiters see the version only once the update is complete (listeners run, old version released).
        LoadedModel replaced = old;
        Runnable complete = () -> {
            if (replaced != null) {
                replaced.releaseRef();
            }
            synchronized (monitor) {
                completedVersion = Math.max(completedVersion, m.version());
                monitor.notifyAll();
            }
        };
        if (old != null && old.hostData() != null) {
            // Closing a host version's view of its buffer (a shared arena) makes every thread of the
            // process pass a handshake: 0.1-0.3 ms on average here, several ms at worst. Neither the
            // swapping thread (the notifier's, for an inline version) nor the next update waits for it.
            try {
                releaser.execute(complete);
                return;
            } catch (RejectedExecutionException closing) {
                // closing: release here
            }
        }
        complete.run(); // a GPU version is freed on the thread that loaded it, where its CUDA context is current
    }

    /**
     * Registers a listener for {@link #stop}; calls it at once, on the calling thread, if the consumer stopped already.
     */
    void onFailure(Consumer<ViperException> listener) {
        ViperException f;
        synchronized (monitor) {
            f = stopped;
            if (f == null) {
                failureListeners.add(listener);
                return;
            }
        }
        listener.accept(f);
    }

    /**
     * No newer version will come, because of {@code failure} (the notifier's broker or every location of a version
     * refused this consumer): the version serving stays, a wait in {@link #awaitVersion} throws the failure, and the
     * failure listeners hear it once, on the calling thread; without any, it is logged. Only the first call counts.
     */
    void stop(ViperException failure) {
        boolean heard;
        synchronized (monitor) {
            if (stopped != null) {
                return;
            }
            stopped = failure;
            heard = !failureListeners.isEmpty();
            monitor.notifyAll();
        }
        if (!heard) {
            LOG.log(
                    System.Logger.Level.ERROR,
                    "consumer " + model + ": stopped following the model, serving v" + version() + ": "
                            + failure.getMessage());
        }
        failureListeners.tell(failure);
    }

    /** Why the consumer stopped following the model ({@link #stop}), or null while it follows. */
    ViperException stopped() {
        synchronized (monitor) {
            return stopped;
        }
    }

    /**
     * Blocks until {@code v} or a newer version has been swapped in; returns the version serving. Throws the failure
     * {@link #stop} reported, of its reason, when none will come.
     */
    long awaitVersion(long v, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (monitor) {
            while (completedVersion < v) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new ViperTimeoutException("consumer " + model + ": v" + v + " did not arrive within "
                            + timeout.toMillis() + " ms (serving v" + completedVersion + ")");
                }
                if (closed) {
                    throw new ViperClosedException("consumer " + model + " is closed");
                }
                if (stopped != null) {
                    throw ViperException.of(
                            stopped.reason(),
                            "consumer " + model + ": v" + v + " will not arrive (serving v" + completedVersion + "): "
                                    + stopped.getMessage(),
                            stopped);
                }
                try {
                    monitor.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ViperException(
                            ViperException.Reason.INTERNAL, "interrupted while waiting for " + model + " v" + v);
                }
            }
            return completedVersion;
        }
    }

    /** Stops serving: releases the replaced versions and the current one, and warns about each version still leased. */
    @Override
    public void close() {
        releaser.shutdown();
        try {
            if (!releaser.awaitTermination(10, TimeUnit.SECONDS)) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "consumer {0}: releasing replaced versions did not finish in 10 s",
                        model);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LoadedModel m;
        List<LoadedModel> held;
        synchronized (monitor) {
            if (closed) {
                return;
            }
            closed = true;
            m = current.getAndSet(null);
            held = List.copyOf(live);
            live.clear();
            monitor.notifyAll();
        }
        if (m != null) {
            m.releaseRef();
        }
        for (LoadedModel l : held) {
            int leases = l.references();
            if (leases > 0) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "consumer " + model + " closed while v" + l.version() + " is still leased (" + leases
                                + " open lease" + (leases == 1 ? "" : "s")
                                + "); its memory is freed when the last lease closes");
            }
        }
    }
}
