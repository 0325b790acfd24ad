package io.viper.internal.consumer;

import io.viper.manifest.Manifest;
import java.lang.foreign.MemorySegment;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * The first step of a consumer's data path: the manifests it has heard of for its model. It keeps the last 16 by
 * version (for {@code fetch}), tells manifest listeners of each newer version, and (with
 * {@code viper.consumer.autoload}) holds the newest version not yet serving as the fetch thread's next target; a newer
 * version whose announcement carried its bytes it first offers to swap in at once on the notifier's thread (the
 * {@link Fetcher}'s, given to the constructor). A repeated announcement of that version adds locations (the PFS one
 * comes after the transports') and makes it a target again; older versions are ignored, so versions only move forward.
 *
 * <p>Threads: {@link #offer} runs on the notifier's thread (and once on the thread creating the consumer, for the
 * repository's latest version); {@link #awaitTarget} and {@link #awaitRetry} on the fetch thread; the rest on any
 * thread. Thread-safe.
 */
final class ManifestTracker implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ManifestTracker.class.getName());
    private static final int KNOWN_MANIFESTS = 16;

    private final String model;
    private final boolean autoload;
    private final LongSupplier servingVersion;
    private final Listeners<Manifest> listeners;
    private final Object monitor = new Object();
    private final LinkedHashMap<Long, Manifest> known = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Manifest> eldest) {
            return size() > KNOWN_MANIFESTS;
        }
    };
    private long announcedVersion;
    private Manifest newest;
    private boolean newestChanged;
    private boolean closed;
    /**
     * The newest version announced and its bytes, when its announcement carried them, else null (guarded by
     * {@link #monitor}).
     */
    private long inlineVersion;

    private MemorySegment inlineData;
    /**
     * Swaps a version in from its announcement's bytes on the notifier's thread, when it can at once ({@link Fetcher}).
     */
    private final Predicate<Manifest> swapsAnnounced;

    /**
     * A tracker whose versions only the fetch thread loads.
     *
     * @param autoload whether newer versions become fetch targets ({@code viper.consumer.autoload})
     * @param servingVersion the version serving now: older announcements are not targets
     */
    ManifestTracker(String model, boolean autoload, LongSupplier servingVersion) {
        this(model, autoload, servingVersion, m -> false);
    }

    /**
     * @param swapsAnnounced what {@link #offer} calls, on the notifier's thread, for a newer version whose announcement
     *     carried its bytes (after the manifest listeners): it swaps the version in and returns true, or returns false
     *     and the fetch thread loads it
     */
    ManifestTracker(String model, boolean autoload, LongSupplier servingVersion, Predicate<Manifest> swapsAnnounced) {
        this.model = model;
        this.autoload = autoload;
        this.servingVersion = servingVersion;
        this.swapsAnnounced = swapsAnnounced;
        this.listeners = new Listeners<>("consumer " + model + ": manifest listener");
    }

    /**
     * Records a manifest from the notifier or the repository; only newer versions (or more locations) matter. A second
     * manifest of a known version whose tensors or metadata differ is refused, never merged: its locations serve other
     * bytes than the first one's hashes describe.
     */
    void offer(Manifest m) {
        offer(m, null);
    }

    /**
     * As {@link #offer(Manifest)}, with the version's bytes from its announcement (unverified), or null. Only the
     * newest version's bytes are kept, until a newer version is announced.
     */
    void offer(Manifest m, MemorySegment data) {
        if (!m.model().equals(model)) {
            return;
        }
        boolean fresh;
        boolean carried = false;
        synchronized (monitor) {
            Manifest had = known.get(m.version());
            if (had != null && !had.sameContent(m)) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "consumer {0}: refused a second v{1} from {2} whose tensors differ from the one {3} announced"
                                + " first",
                        model,
                        Long.toString(m.version()),
                        m.producerId(),
                        had.producerId());
                return;
            }
            fresh = had == null && m.version() > announcedVersion;
            if (fresh) {
                announcedVersion = m.version();
            }
            known.put(m.version(), had == null ? m : had.withLocations(m.locations()));
            if (m.version() > inlineVersion) {
                inlineVersion = m.version();
                inlineData = data != null && data.byteSize() == m.totalBytes() ? data : null;
                carried = inlineData != null;
            }
        }
        if (autoload && carried && fresh) {
            // The bytes are here: swapping them in on this thread spares waking the fetch thread,
            // which costs more than the copy and the check.
            listeners.tell(m);
            if (!swapsAnnounced.test(m)) {
                target(m);
            }
            return;
        }
        if (autoload) {
            target(m); // first: the fetch thread starts while the listeners run
        }
        if (fresh) {
            listeners.tell(m);
        }
    }

    private void target(Manifest m) {
        if (m.version() <= servingVersion.getAsLong()) {
            return;
        }
        synchronized (monitor) {
            if (newest == null || m.version() > newest.version()) {
                newest = known.get(m.version());
                newestChanged = true;
                monitor.notifyAll();
            } else if (m.version() == newest.version()) {
                Manifest merged = newest.withLocations(m.locations());
                if (merged.locations().size() > newest.locations().size()) {
                    newest = merged;
                    newestChanged = true;
                    monitor.notifyAll();
                }
            } else {
                LOG.log(
                        System.Logger.Level.DEBUG,
                        "consumer {0}: ignoring v{1}, older than v{2}",
                        model,
                        Long.toString(m.version()),
                        Long.toString(newest.version()));
            }
        }
    }

    /**
     * How many versions newer than {@code version} were announced, of the last {@value #KNOWN_MANIFESTS} heard of: a
     * count, not a difference of version numbers, which may jump (a producer's first version can be the clock).
     */
    long announcedAfter(long version) {
        synchronized (monitor) {
            return known.keySet().stream().filter(v -> v > version).count();
        }
    }

    /** The bytes of {@code version} its announcement carried, if it did and it is the newest announced. */
    Optional<MemorySegment> inlineData(long version) {
        synchronized (monitor) {
            return version == inlineVersion ? Optional.ofNullable(inlineData) : Optional.empty();
        }
    }

    /** Drops the bytes {@code version}'s announcement carried (they failed verification): a retry fetches it. */
    void forgetInlineData(long version) {
        synchronized (monitor) {
            if (version == inlineVersion) {
                inlineData = null;
            }
        }
    }

    /** The manifest of {@code version} if it is among the last ones heard of. */
    Optional<Manifest> find(long version) {
        synchronized (monitor) {
            return Optional.ofNullable(known.get(version));
        }
    }

    /** Adds a listener for newer manifests and calls it at once with the newest announced so far, if any. */
    void onManifest(Consumer<Manifest> listener) {
        listeners.add(listener);
        Manifest last;
        synchronized (monitor) {
            last = known.get(announcedVersion);
        }
        if (last != null) {
            listener.accept(last);
        }
    }

    /**
     * Fetch thread: waits until there is a target (a newer version, or the same one with more locations) and returns
     * it, or returns null once closed.
     */
    Manifest awaitTarget() throws InterruptedException {
        synchronized (monitor) {
            while (!closed && !newestChanged) {
                monitor.wait();
            }
            if (closed) {
                return null;
            }
            newestChanged = false;
            return newest;
        }
    }

    /**
     * Fetch thread, after {@code failed} could not be loaded: waits {@code backoffMs}, or less if a new target arrives
     * or the tracker closes; then, unless something newer came, makes {@code failed} the target again.
     */
    void awaitRetry(Manifest failed, long backoffMs) throws InterruptedException {
        synchronized (monitor) {
            long until = System.currentTimeMillis() + backoffMs;
            while (!closed && !newestChanged && System.currentTimeMillis() < until) {
                monitor.wait(Math.max(1, until - System.currentTimeMillis()));
            }
            if (!newestChanged && newest != null && newest.version() == failed.version()) {
                newestChanged = true;
            }
        }
    }

    /** Wakes the fetch thread for good: {@link #awaitTarget} returns null from now on. */
    @Override
    public void close() {
        synchronized (monitor) {
            closed = true;
            monitor.notifyAll();
        }
    }
}
