package io.viper.internal.consumer;

import io.viper.TensorSet;
import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.internal.ViperRuntime;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.Providers;
import io.viper.spi.TransportClient;
import io.viper.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The consumer's fetch thread and its fallback across locations, on one route ({@link #load}): the thread takes the
 * {@link ManifestTracker}'s target, lets the {@link PathSelector} order its locations by what this consumer can use now
 * (first the bytes its announcement carried, when the tracker has them), and tries them in that order with the
 * {@link Loader} of each location ({@link InlineLoader}, {@link DeviceLoader}, {@link MappedLoader},
 * {@link HostLoader}) until one delivers a verified version, which the {@link ServingModel} swaps in. When every
 * location failed, the current version keeps serving and the thread retries after a backoff that doubles up to 30 s and
 * starts afresh for each newer version. For a version whose announcement carried its bytes, the notifier's thread takes
 * the same route first ({@link #swapAnnounced}), limited to those bytes and a receive buffer free now, when the fetch
 * thread is not loading: one lock keeps loads and swaps one at a time, so versions still only move forward. The Fetcher
 * makes the tracker, so that the tracker's call to it is there from the start.
 *
 * <p>A location that refuses this consumer's credentials or whose TLS certificate it refuses
 * ({@link TransportClient#refusesConsumer}) is passed over like any failing one. If no location delivers and one
 * refused so, the failure is final, as in Kafka, where an authentication failure is not retried: the same secret and
 * trust fail again. The thread {@linkplain ServingModel#stop stops} the consumer following the model (the current
 * version keeps serving, no newer one is swapped in) and ends. Every other failure, a stranger on a producer's port and
 * a host that does not resolve included, is retried.
 *
 * <p>{@link #fetchTensors} runs the same fallback loop on its caller's thread for a few tensors. Thread-safe;
 * {@link #close()} stops the thread and waits for it.
 */
final class Fetcher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Fetcher.class.getName());
    private static final long MAX_BACKOFF_MS = 30_000;

    private final String model;
    private final ViperRuntime rt;
    private final ManifestTracker tracker;
    private final ServingModel serving;
    private final ReceiveSlots slots;
    private final DeviceLoader device;
    private final HostLoader host;
    private final MappedLoader mapped;
    private final InlineLoader inline;
    private final Verifier verifier;
    private final List<String> allowedSchemes;
    private final long firstBackoffMs;
    private final Thread thread;
    /**
     * Held while a version loads and swaps in: by the fetch thread, or by the notifier's thread for a version its
     * announcement carried.
     */
    private final ReentrantLock loading = new ReentrantLock();

    private volatile boolean closed;
    /** Why the newest version announced is not serving: the last load's failure, null once one loads. */
    private volatile RuntimeException behind;

    /** @param autoload {@code viper.consumer.autoload}, for the {@link #tracker()} */
    Fetcher(
            String model,
            ViperRuntime rt,
            boolean autoload,
            ServingModel serving,
            ReceiveSlots slots,
            DeviceLoader device,
            Verifier verifier) {
        this.model = model;
        this.rt = rt;
        this.tracker = new ManifestTracker(model, autoload, serving::version, this::swapAnnounced);
        this.serving = serving;
        this.slots = slots;
        this.device = device;
        this.verifier = verifier;
        this.host = new HostLoader(
                slots,
                verifier,
                serving::retainCurrent,
                rt.config().get(ViperConfig.CONSUMER_VERIFY_REUSE_HASHES),
                new SourcedRead(model, rt, rt.config().get(ViperConfig.CONSUMER_PATHS)));
        this.mapped = new MappedLoader(
                verifier,
                host,
                serving::retainCurrent,
                () -> !rt.config().get(ViperConfig.CONSUMER_RELAY_TRANSPORTS).isEmpty()
                        || rt.receiveAllocator().handsBuffersToOtherProcesses());
        this.inline = new InlineLoader(tracker, host);
        this.allowedSchemes = rt.config().get(ViperConfig.CONSUMER_PATHS);
        this.firstBackoffMs = rt.config().get(ViperConfig.RETRY_BACKOFF_MS);
        this.thread =
                Thread.ofPlatform().daemon().name("viper-consumer-" + model).unstarted(this::run);
    }

    /** The manifests this consumer heard of, which the fetch thread follows. */
    ManifestTracker tracker() {
        return tracker;
    }

    void start() {
        thread.start();
    }

    private void run() {
        long backoff = firstBackoffMs;
        long backoffVersion = -1;
        try {
            while (!closed) {
                Manifest target = tracker.awaitTarget();
                if (target == null) {
                    return;
                }
                if (target.version() != backoffVersion) {
                    // Backoff grows only while the same version keeps failing; a newer one starts afresh.
                    backoff = firstBackoffMs;
                    backoffVersion = target.version();
                }
                RuntimeException failure = loadUnlessServed(target);
                behind = failure;
                if (failure == null) {
                    backoff = firstBackoffMs;
                    continue;
                }
                if (closed) {
                    return;
                }
                rt.metrics().loadFailed(model);
                if (TransportClient.refusesConsumer(failure)) {
                    serving.stop((ViperException) failure);
                    return;
                }
                long delay = FetchRetry.jittered(backoff, ThreadLocalRandom.current());
                LOG.log(
                        System.Logger.Level.WARNING,
                        "consumer {0}: v{1} not loaded: {2}; retrying in {3} ms",
                        model,
                        Long.toString(target.version()),
                        failure.getMessage(),
                        Long.toString(delay));
                tracker.awaitRetry(target, delay);
                backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
            }
        } catch (InterruptedException e) {
            // closing
        } catch (Throwable e) {
            // An Error out of a load (a transport's missing native library, memory the machine could not
            // give): this thread ends, so say so to the waiters and the failure listeners rather than
            // leave them waiting for versions nobody will load. The version serving keeps serving.
            LOG.log(System.Logger.Level.ERROR, "consumer " + model + ": the fetch thread failed: " + e, e);
            serving.stop(new ViperException(
                    ViperException.Reason.INTERNAL, "consumer " + model + ": the fetch thread failed: " + e, e));
        }
    }

    /** Why the newest version announced is not serving (the last try's failure), if one failed since the last load. */
    Optional<RuntimeException> behind() {
        return Optional.ofNullable(behind);
    }

    /**
     * Fetch thread: loads {@code target} unless it (or a newer version) serves already; returns what failed, or null.
     */
    private RuntimeException loadUnlessServed(Manifest target) {
        loading.lock();
        try {
            if (target.version() > serving.version()) { // else the notifier's thread swapped it, or a newer one, in
                boolean carried = tracker.inlineData(target.version()).isPresent();
                load(target, carried ? PathSelector.InlineBytes.FIRST : PathSelector.InlineBytes.NONE);
            }
            return null;
        } catch (RuntimeException e) {
            return e;
        } finally {
            loading.unlock();
        }
    }

    /**
     * The notifier's thread, for a newer version whose announcement carried its bytes: takes the route of {@link #load}
     * now, limited to what this thread may do without waiting (those bytes, into a receive buffer free now), unless the
     * fetch thread is loading. Returns whether it swapped the version in; if not, the fetch thread takes it next as any
     * target (bytes that did not verify were forgotten, and it fetches the version).
     */
    boolean swapAnnounced(Manifest m) {
        if (closed || serving.stopped() != null || !loading.tryLock()) {
            return false;
        }
        try {
            // Only the holder of the lock claims receive buffers: one free now stays free for this load.
            return m.version() > serving.version() && slots.freeNow() && load(m, PathSelector.InlineBytes.ONLY);
        } catch (RuntimeException e) {
            return false; // the fallback loop logged why
        } finally {
            loading.unlock();
        }
    }

    /**
     * The one route from a manifest to the swap, on whichever thread holds {@link #loading}: the {@link PathSelector}
     * orders {@code m}'s locations ({@code inline} says whether the bytes its announcement carried come first, or
     * alone), the fallback loop tries them in that order with each one's {@link Loader}, and the {@link ServingModel}
     * swaps the first verified version in.
     *
     * @return whether it swapped; false only when {@code inline} is {@code ONLY} and those bytes are not usable here
     */
    private boolean load(Manifest m, PathSelector.InlineBytes inline) {
        PathSelector.Capabilities caps = new PathSelector.Capabilities(
                device.servesOnGpu(),
                device.freeBytes(),
                slots.freeBytes(),
                allowedSchemes,
                device.noGpuReason(),
                inline);
        PathSelector.Selection sel =
                PathSelector.select(m, caps, Providers::transport, rt::clientUnavailable, this::ownFile);
        if (sel.usable().isEmpty() && inline == PathSelector.InlineBytes.ONLY) {
            return false;
        }
        if (!sel.usable().isEmpty()) {
            rt.metrics().selected(model, sel.usable().getFirst().location().scheme());
        }
        try {
            fromFirstWorking(m, sel, model + " v" + m.version(), (loc, client, fallbacks, started) -> {
                Loader.Loaded loaded = loaderFor(loc).load(m, loc, client);
                if (loaded.bytesMoved() > 0) {
                    rt.metrics().bytes(model, loc.scheme(), loaded.bytesMoved());
                    long relayed = loaded.bytesFromRelays();
                    String direct = loc.tier() == Tier.PFS ? "pfs" : "producer";
                    rt.metrics().bytesFrom(model, direct, loaded.bytesMoved() - relayed);
                    if (relayed > 0) {
                        rt.metrics().bytesFrom(model, "relay", relayed);
                    }
                }
                if (loaded.bytesReused() > 0) {
                    rt.metrics().reused(model, loc.scheme(), loaded.bytesReused());
                }
                serving.swap(m, loaded, loc, started, fallbacks);
                return loaded;
            });
            return true;
        } finally {
            // Logged after the load, so that formatting the line does not delay the update.
            if (LOG.isLoggable(System.Logger.Level.INFO)) {
                LOG.log(
                        System.Logger.Level.INFO,
                        "consumer {0} v{1} ({2} bytes): {3}",
                        model,
                        Long.toString(m.version()),
                        Long.toString(m.totalBytes()),
                        sel.describe());
            }
        }
    }

    /** Where this consumer's PFS repository keeps {@code m}'s version: the only file:// location it reads. */
    private Optional<Location> ownFile(Manifest m) {
        return rt.repository().flatMap(r -> r.locate(m.model(), m.version()));
    }

    private Loader loaderFor(Location loc) {
        if (loc.scheme().equals(InlineLoader.SCHEME)) {
            return inline;
        }
        return switch (loc.tier()) {
            case GPU -> device.servesOnGpu() ? device : host;
            case PFS -> mapped;
            case HOST -> host;
        };
    }

    /**
     * Pulls the named tensors of {@code m} into memory of their own, verified; on the caller's thread. GPU locations
     * are not used: the tensors arrive in host memory. Blocks the serving version has are copied from it rather than
     * pulled ({@link BlockPlan}).
     *
     * @throws ViperNotFoundException naming the tensors {@code m} does not have
     */
    TensorSet fetchTensors(Manifest m, Set<String> names) {
        List<TensorEntry> wanted = new ArrayList<>();
        Set<String> missing = new TreeSet<>(names);
        for (TensorEntry e : m.tensors()) {
            if (missing.remove(e.name())) {
                wanted.add(e);
            }
        }
        if (!missing.isEmpty()) {
            throw new ViperNotFoundException("model " + model + " v" + m.version() + " has no tensor"
                    + (missing.size() > 1 ? "s " : " ") + String.join(", ", missing));
        }
        long total = 0;
        List<Long> destinations = new ArrayList<>();
        for (TensorEntry e : wanted) {
            destinations.add(total);
            total += e.info().length();
        }
        long bytes = total;
        PathSelector.Selection sel = PathSelector.select(
                m,
                new PathSelector.Capabilities(false, 0, Long.MAX_VALUE, allowedSchemes),
                Providers::transport,
                rt::clientUnavailable,
                this::ownFile);
        return fromFirstWorking(
                m, sel, names + " of " + model + " v" + m.version(), (loc, client, fallbacks, started) -> {
                    Arena arena = Arena.ofShared();
                    try {
                        MemorySegment dst =
                                arena.allocate(Math.max(1, bytes), 64).asSlice(0, bytes);
                        long[] movedAndReused = TensorReceiver.receive(
                                model, serving, verifier, m, loc, client, wanted, destinations, dst);
                        List<Tensor> tensors = new ArrayList<>();
                        for (int i = 0; i < wanted.size(); i++) {
                            TensorEntry e = wanted.get(i);
                            tensors.add(new Tensor(
                                    e.info().withOffset(destinations.get(i)),
                                    dst.asSlice(destinations.get(i), e.info().length())));
                        }
                        rt.metrics().bytes(model, loc.scheme(), movedAndReused[0]);
                        if (movedAndReused[1] > 0) {
                            rt.metrics().reused(model, loc.scheme(), movedAndReused[1]);
                        }
                        return new FetchedTensors(
                                m.version(), loc, movedAndReused[0], movedAndReused[1], tensors, arena);
                    } catch (RuntimeException e) {
                        arena.close();
                        throw e;
                    }
                });
    }

    /**
     * One try at one location: {@code fallbacks} locations failed before it, and {@code startedNs} is when it began
     * (before the transport's client was opened, which the first time takes a while).
     */
    private interface Attempt<T> {
        T from(Location loc, TransportClient client, int fallbacks, long startedNs);
    }

    /**
     * The fallback loop: tries the usable locations of {@code sel} in order and returns the first result; each failure
     * is counted, logged, and passed over for the next location.
     *
     * @param what names what is loaded, for messages ("m v3")
     * @throws RetriableViperException UNAVAILABLE when no location is usable, TRANSFER when all failed
     * @throws ViperConfigException when all failed and one {@linkplain TransportClient#refusesConsumer refused this
     *     consumer}: its message, the other failures after it, and it as the cause
     */
    private <T> T fromFirstWorking(Manifest m, PathSelector.Selection sel, String what, Attempt<T> attempt) {
        if (sel.usable().isEmpty()) {
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE,
                    "no usable location for " + what
                            + (sel.skipped().isEmpty() ? "" : " (" + String.join("; ", sel.skipped()) + ")"));
        }
        List<String> failures = new ArrayList<>();
        List<String> refusedAt = new ArrayList<>();
        ViperException refusal = null;
        int refusalAt = -1;
        for (PathSelector.Candidate c : sel.usable()) {
            Location loc = c.location();
            long started = System.nanoTime();
            try {
                // The announcement's bytes are read through no transport.
                TransportClient client = loc.scheme().equals(InlineLoader.SCHEME)
                        ? null
                        : rt.client(loc.scheme())
                                .orElseThrow(() -> new RetriableViperException(
                                        ViperException.Reason.UNAVAILABLE, loc.scheme() + ":// transport unavailable"));
                return attempt.from(loc, client, failures.size(), started);
            } catch (RuntimeException e) {
                if (closed) {
                    throw e;
                }
                String reason = e instanceof ViperException ve
                        ? ve.reason().name()
                        : e.getClass().getSimpleName();
                rt.metrics().failure(model, loc.scheme(), reason);
                rt.metrics().fallback(model, loc.scheme());
                if (refusal == null && TransportClient.refusesConsumer(e)) {
                    refusal = (ViperException) e;
                    refusalAt = failures.size();
                }
                failures.add(loc.uri() + ": " + e.getMessage());
                if (FetchRetry.refusedConnection(e)) {
                    refusedAt.add(loc.uri().toString());
                }
                LOG.log(
                        System.Logger.Level.WARNING,
                        "consumer {0} v{1}: {2} failed ({3}); trying the next location",
                        model,
                        Long.toString(m.version()),
                        loc.uri(),
                        e.getMessage());
            }
        }
        if (refusal != null) {
            failures.remove(refusalAt);
            throw new ViperConfigException(
                    refusal.getMessage()
                            + (failures.isEmpty()
                                    ? ""
                                    : " (every other location of " + what + " failed too: "
                                            + String.join("; ", failures) + ")"),
                    refusal);
        }
        if (refusedAt.size() == failures.size()) {
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, FetchRetry.gone(m, refusedAt));
        }
        throw new RetriableViperException(
                ViperException.Reason.TRANSFER,
                "every location of " + what + " failed: " + String.join("; ", failures));
    }

    /** Stops the fetch thread (interrupting a transfer in progress) and waits up to 10 s for it. */
    @Override
    public void close() {
        closed = true;
        tracker.close();
        thread.interrupt();
        try {
            thread.join(10_000);
            // A load on the notifier's thread (bytes that came with the announcement) may still hold a receive buffer:
            // it is back before the consumer closes its budget, which would otherwise warn that it is still held.
            if (loading.tryLock(10, TimeUnit.SECONDS)) {
                loading.unlock();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Tensors fetched on their own, in an arena this set owns; closing it more than once does nothing. */
    private record FetchedTensors(
            long version,
            Location location,
            long bytes,
            long reusedBytes,
            List<Tensor> tensors,
            Arena arena,
            AtomicBoolean closed)
            implements TensorSet {
        FetchedTensors(
                long version, Location location, long bytes, long reusedBytes, List<Tensor> tensors, Arena arena) {
            this(version, location, bytes, reusedBytes, List.copyOf(tensors), arena, new AtomicBoolean());
        }

        @Override
        public Tensor tensor(String name) {
            for (Tensor t : tensors) {
                if (t.name().equals(name)) {
                    return t;
                }
            }
            throw new ViperNotFoundException("tensor '" + name + "' was not fetched");
        }

        @Override
        public void close() {
            // An arena closed twice throws: try-with-resources around an explicit close would fail.
            if (closed.compareAndSet(false, true)) {
                arena.close();
            }
        }
    }
}
