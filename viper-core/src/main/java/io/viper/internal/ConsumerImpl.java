package io.viper.internal;

import io.viper.spi.Providers;
import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.TensorSet;
import io.viper.ViperConfig;
import io.viper.ViperConsumer;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperCorruptDataException;
import io.viper.errors.ViperException;
import io.viper.hash.ContentHash;
import io.viper.hash.ParallelHash64;
import io.viper.hash.Xxh3;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.spi.TransportClient;
import io.viper.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * The consumer of one model. A notifier subscription records the newest manifest; one fetch thread
 * pulls it into a free receive buffer (or maps it from the PFS), verifies every tensor's hash, and
 * swaps it in. Versions only move forward; a failed or corrupt transfer leaves the current model
 * serving and falls back to the next location, finally the PFS, then retries with backoff.
 */
final class ConsumerImpl implements ViperConsumer {
    private static final System.Logger LOG = System.getLogger(ConsumerImpl.class.getName());
    private static final int KNOWN_MANIFESTS = 16;
    /** Verification overlaps the transfer in about this many batches... */
    private static final int VERIFY_BATCHES = 8;
    /** ...of at least this size, so that small models are read in one request. */
    private static final long VERIFY_BATCH_MIN_BYTES = 16L << 20;
    private static final long VERIFY_CHUNK = 64L << 20;

    private final ViperRuntime rt;
    private final String model;
    private final Runnable onClose;
    private final long hostBudget;
    private final long bufferWaitMs;
    private final long firstBackoffMs;
    private final List<String> allowedSchemes;
    private final int cudaDevice;
    private final long gpuBudget;
    private final GpuProvider gpu;
    private final String noGpuReason;
    private final AtomicLong gpuBytesHeld = new AtomicLong();
    private final ReceiveSlot[] slots = {new ReceiveSlot(0), new ReceiveSlot(1)};
    private final AtomicReference<LoadedModel> current = new AtomicReference<>();
    private final List<Consumer<ModelUpdate>> listeners = new CopyOnWriteArrayList<>();
    private final List<Consumer<Manifest>> manifestListeners = new CopyOnWriteArrayList<>();
    private final boolean autoload;
    private final Object monitor = new Object();
    private final LinkedHashMap<Long, Manifest> known = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Manifest> eldest) {
            return size() > KNOWN_MANIFESTS;
        }
    };
    private final Notifier.Subscription subscription;
    private final Thread fetcher;
    private Manifest newest;
    private long completedVersion;
    private long announcedVersion;
    private boolean newestChanged;
    private volatile boolean closed;

    ConsumerImpl(ViperRuntime rt, String model, Runnable onClose) {
        this.rt = rt;
        this.model = Manifest.validateModelName(model);
        this.onClose = onClose;
        ViperConfig c = rt.config();
        this.hostBudget = c.get(ViperConfig.CONSUMER_BUDGET);
        this.bufferWaitMs = c.get(ViperConfig.LEASE_WAIT_MS);
        this.firstBackoffMs = c.get(ViperConfig.RETRY_BACKOFF_MS);
        this.allowedSchemes = c.get(ViperConfig.CONSUMER_PATHS);
        this.autoload = c.get(ViperConfig.CONSUMER_AUTOLOAD);
        this.cudaDevice = ViperConfig.cudaDevice(c.get(ViperConfig.CONSUMER_DEVICE));
        this.gpuBudget = c.get(ViperConfig.CONSUMER_GPU_BUDGET);
        if (cudaDevice < 0) {
            this.gpu = null;
            this.noGpuReason = "consumer serves on host (viper.consumer.device=host)";
        } else {
            Optional<GpuProvider> p = Providers.gpu();
            Optional<String> why = p.isEmpty() ? Optional.of("no CUDA driver/device: no GPU provider installed (is viper-transfer on the class path?)")
                    : p.get().unavailableReason();
            if (why.isEmpty() && cudaDevice >= p.get().deviceCount()) {
                why = Optional.of("no CUDA driver/device: viper.consumer.device asks for CUDA device " + cudaDevice + " but "
                        + p.get().deviceCount() + " are visible");
            }
            this.gpu = why.isEmpty() ? p.get() : null;
            this.noGpuReason = why.orElse(null);
            if (why.isPresent()) {
                LOG.log(System.Logger.Level.WARNING, "consumer {0}: serving on host: {1}", model, why.get());
            }
        }
        Optional<CheckpointRepository> repo = rt.repository();
        repo.flatMap(r -> r.latest(model)).ifPresent(this::offer);
        Notifier notifier = rt.notifier(NotifierProvider.Role.CONSUMER);
        this.subscription = notifier.subscribe(model, new Notifier.ManifestListener() {
            @Override
            public void onManifest(Manifest manifest) {
                offer(manifest);
            }

            @Override
            public void onProblem(String problem) {
                // The notifier logs its own problems; keep a trace here for debugging.
                LOG.log(System.Logger.Level.DEBUG, "consumer {0}: notifier: {1}", model, problem);
            }
        });
        this.fetcher = Thread.ofPlatform().daemon().name("viper-consumer-" + model).start(this::fetchLoop);
        LOG.log(System.Logger.Level.INFO, "consumer {0}: following {1}", model, notifier.uri());
    }

    /** Records a manifest from the notifier or the repository; only newer versions (or more locations) matter. */
    private void offer(Manifest m) {
        if (!m.model().equals(model)) {
            return;
        }
        boolean fresh;
        synchronized (monitor) {
            Manifest had = known.get(m.version());
            fresh = had == null && m.version() > announcedVersion;
            if (fresh) {
                announcedVersion = m.version();
            }
            known.put(m.version(), had == null ? m : had.withLocations(m.locations()));
        }
        if (fresh) {
            for (Consumer<Manifest> l : manifestListeners) {
                try {
                    l.accept(m);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "consumer " + model + ": manifest listener failed: " + e, e);
                }
            }
        }
        if (!autoload) {
            return;
        }
        synchronized (monitor) {
            LoadedModel cur = current.get();
            if (cur != null && m.version() <= cur.version()) {
                return;
            }
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
                LOG.log(System.Logger.Level.DEBUG, "consumer {0}: ignoring v{1}, older than v{2}", model, m.version(), newest.version());
            }
        }
    }

    private void fetchLoop() {
        long backoff = firstBackoffMs;
        long backoffVersion = -1;
        while (!closed) {
            Manifest target;
            synchronized (monitor) {
                while (!closed && !newestChanged) {
                    try {
                        monitor.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (closed) {
                    return;
                }
                target = newest;
                newestChanged = false;
            }
            LoadedModel cur = current.get();
            if (cur != null && target.version() <= cur.version()) {
                continue;
            }
            if (target.version() != backoffVersion) {
                // Backoff grows only while the same version keeps failing; a newer one starts afresh.
                backoff = firstBackoffMs;
                backoffVersion = target.version();
            }
            try {
                load(target);
                backoff = firstBackoffMs;
            } catch (RuntimeException e) {
                if (closed) {
                    return;
                }
                LOG.log(System.Logger.Level.WARNING, "consumer {0}: v{1} not loaded: {2}; retrying in {3} ms", model, target.version(), e.getMessage(), backoff);
                synchronized (monitor) {
                    long until = System.currentTimeMillis() + backoff;
                    while (!closed && !newestChanged && System.currentTimeMillis() < until) {
                        try {
                            monitor.wait(Math.max(1, until - System.currentTimeMillis()));
                        } catch (InterruptedException ie) {
                            return;
                        }
                    }
                    if (!newestChanged && newest != null && newest.version() == target.version()) {
                        newestChanged = true;
                    }
                }
                backoff = Math.min(backoff * 2, 30_000);
            }
        }
    }

    /** Tries each usable location in order; swaps on the first verified success. */
    private void load(Manifest m) {
        long size = m.totalBytes();
        PathSelector.Selection sel = PathSelector.select(m,
                new PathSelector.Capabilities(gpu != null, freeGpuBytes(), freeHostBytes(size), allowedSchemes, noGpuReason),
                Providers::transport, rt::clientUnavailable);
        LOG.log(System.Logger.Level.INFO, "consumer {0} v{1} ({2} bytes): {3}", model, m.version(), size, sel.describe());
        if (sel.usable().isEmpty()) {
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, "no usable location for " + model + " v" + m.version()
                    + (sel.skipped().isEmpty() ? "" : " (" + String.join("; ", sel.skipped()) + ")"));
        }
        rt.metrics().selected(model, sel.usable().getFirst().location().scheme());
        List<String> failures = new ArrayList<>();
        int fallbacks = 0;
        for (PathSelector.Candidate c : sel.usable()) {
            Location loc = c.location();
            try {
                loadFrom(m, loc, fallbacks);
                return;
            } catch (RuntimeException e) {
                if (closed) {
                    throw e;
                }
                String reason = e instanceof ViperException ve ? ve.reason().name() : e.getClass().getSimpleName();
                rt.metrics().failure(model, loc.scheme(), reason);
                rt.metrics().fallback(model, loc.scheme());
                failures.add(loc.uri() + ": " + e.getMessage());
                fallbacks++;
                LOG.log(System.Logger.Level.WARNING, "consumer {0} v{1}: {2} failed ({3}); trying the next location", model, m.version(), loc.uri(), e.getMessage());
            }
        }
        throw new RetriableViperException(ViperException.Reason.TRANSFER, "every location of " + model + " v" + m.version() + " failed: "
                + String.join("; ", failures));
    }

    private void loadFrom(Manifest m, Location loc, int fallbacks) {
        TransportClient client = rt.client(loc.scheme()).orElseThrow(() ->
                new RetriableViperException(ViperException.Reason.UNAVAILABLE, loc.scheme() + ":// transport unavailable"));
        long t0 = System.nanoTime();
        LoadedModel loaded;
        long bytes;
        long t1;
        if (loc.tier() == Tier.GPU && gpu != null) {
            long size = m.totalBytes();
            DeviceBuffer buf = gpu.allocate(cudaDevice, Math.max(1, size));
            gpuBytesHeld.addAndGet(buf.byteSize());
            Runnable free = () -> {
                buf.close();
                gpuBytesHeld.addAndGet(-buf.byteSize());
            };
            try {
                client.readToDevice(m, loc, List.of(new ByteRange(0, size, 0)), buf);
                t1 = System.nanoTime();
                verifyOnDevice(m, buf, loc);
            } catch (RuntimeException e) {
                free.run();
                throw e;
            }
            rt.metrics().bytes(model, loc.scheme(), size);
            swap(m, new LoadedModel(m, buf, free), loc, size, t0, t1, fallbacks);
            return;
        }
        if (loc.tier() == Tier.PFS) {
            Optional<TransportClient.MappedData> mapped = client.map(m, loc);
            if (mapped.isPresent()) {
                TransportClient.MappedData md = mapped.get();
                t1 = System.nanoTime();
                try {
                    verify(m, md.data(), loc);
                } catch (RuntimeException e) {
                    md.close();
                    throw e;
                }
                loaded = new LoadedModel(m, md.data(), md::close);
                bytes = 0;
                swap(m, loaded, loc, bytes, t0, t1, fallbacks);
                return;
            }
        }
        ReceiveSlot slot = freeSlot(m.totalBytes());
        boolean handedOver = false;
        try {
            MemorySegment dst = slot.segment(m.totalBytes());
            readAndVerify(m, loc, client, dst);
            t1 = System.nanoTime();
            bytes = m.totalBytes();
            loaded = new LoadedModel(m, dst, slot::release);
            handedOver = true;
        } finally {
            if (!handedOver) {
                slot.release();
            }
        }
        rt.metrics().bytes(model, loc.scheme(), bytes);
        swap(m, loaded, loc, bytes, t0, t1, fallbacks);
    }

    private void swap(Manifest m, LoadedModel loaded, Location loc, long bytes, long t0, long t1, int fallbacks) {
        long t2 = System.nanoTime();
        LoadedModel old = current.getAndSet(loaded);
        if (old != null) {
            old.releaseRef();
        }
        double latencyMs = Math.max(0, System.currentTimeMillis() - m.publishedAtMs());
        rt.metrics().update(model, loc.scheme(), latencyMs);
        ModelUpdate u = new ModelUpdate(model, m.version(), old == null ? 0 : old.version(), loc, bytes, latencyMs,
                (t1 - t0) / 1e6, (t2 - t1) / 1e6, fallbacks);
        LOG.log(System.Logger.Level.INFO, "consumer {0}: now serving v{1} from {2} ({3} bytes, transfer {4} ms, verify {5} ms)", model, m.version(),
                loc.uri(), bytes, String.format("%.1f", u.transferMs()), String.format("%.1f", u.verifyMs()));
        for (Consumer<ModelUpdate> l : listeners) {
            try {
                l.accept(u);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "consumer " + model + ": update listener failed: " + e, e);
            }
        }
        // Waiters see the version only once the update is complete (old version released, listeners run).
        synchronized (monitor) {
            completedVersion = m.version();
            monitor.notifyAll();
        }
    }

    /**
     * Pulls the model in tensor-aligned batches and hashes each batch on the hash pool while the
     * next one transfers, so that verification overlaps the transfer instead of following it.
     */
    private void readAndVerify(Manifest m, Location loc, TransportClient client, MemorySegment dst) {
        List<TensorEntry> entries = m.tensors();
        long batchTarget = Math.max(VERIFY_BATCH_MIN_BYTES, m.totalBytes() / VERIFY_BATCHES);
        List<java.util.concurrent.Future<ContentHash>> pending = new ArrayList<>(entries.size());
        try {
            int i = 0;
            while (i < entries.size()) {
                int j = i;
                long start = entries.get(i).info().offset();
                long len = 0;
                while (j < entries.size() && (j == i || len < batchTarget)) {
                    len += entries.get(j).info().length();
                    j++;
                }
                if (len > 0) {
                    client.read(m, loc, List.of(new ByteRange(start, len, start)), dst);
                }
                for (int k = i; k < j; k++) {
                    MemorySegment slice = dst.asSlice(entries.get(k).info().offset(), entries.get(k).info().length());
                    pending.add(rt.hashPool().submit(() -> Xxh3.hash128(slice)));
                }
                i = j;
            }
            for (int k = 0; k < entries.size(); k++) {
                checkHash(m, loc, entries.get(k), pending.get(k).get());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ViperException(ViperException.Reason.INTERNAL, "consumer " + model + ": interrupted while verifying");
        } catch (java.util.concurrent.ExecutionException e) {
            throw new ViperException(ViperException.Reason.INTERNAL, "consumer " + model + ": hashing failed: " + e.getCause(), e.getCause());
        } finally {
            // A failed batch leaves hash tasks reading a buffer that may be reused: wait for them.
            for (var f : pending) {
                try {
                    f.get();
                } catch (Exception ignored) {
                    // reported above, or irrelevant after a failure
                }
            }
        }
    }

    /** Checks every tensor's content hash; throws {@link ViperCorruptDataException} naming the first mismatch. */
    private void verify(Manifest m, MemorySegment data, Location loc) {
        List<TensorEntry> entries = m.tensors();
        List<MemorySegment> slices = entries.stream().map(e -> data.asSlice(e.info().offset(), e.info().length())).toList();
        ContentHash[] got = Xxh3.hashAll(slices, rt.hashPool());
        for (int i = 0; i < entries.size(); i++) {
            checkHash(m, loc, entries.get(i), got[i]);
        }
    }

    /** Throws {@link ViperCorruptDataException} naming the tensor when {@code got} is not its manifest hash. */
    private void checkHash(Manifest m, Location loc, TensorEntry e, ContentHash got) {
        if (!e.hash().equals(got)) {
            throw corrupt(m, loc, e, "hash " + got.toHex() + " does not match the manifest's " + e.hash().toHex());
        }
    }

    private ViperCorruptDataException corrupt(Manifest m, Location loc, TensorEntry e, String problem) {
        return new ViperCorruptDataException(model + " v" + m.version() + " from " + loc.uri() + ": tensor '" + e.name() + "' " + problem);
    }

    /**
     * Verifies a model in GPU memory: the manifest's phash64 computed on the device where the producer
     * gave it; otherwise the XXH3-128 over the bytes streamed to the host in chunks.
     */
    private void verifyOnDevice(Manifest m, DeviceBuffer buf, Location loc) {
        MemorySegment chunk = null;
        try (Arena arena = Arena.ofConfined()) {
            for (TensorEntry e : m.tensors()) {
                long off = e.info().offset();
                long len = e.info().length();
                if (e.phash64().isPresent()) {
                    long got = gpu.hash64(cudaDevice, buf.pointer(off, len), len);
                    if (got != e.phash64().getAsLong()) {
                        throw corrupt(m, loc, e, "phash64 " + ParallelHash64.toHex(got) + " does not match the manifest's "
                                + ParallelHash64.toHex(e.phash64().getAsLong()));
                    }
                    continue;
                }
                if (chunk == null) {
                    chunk = arena.allocate(VERIFY_CHUNK, 4096);
                }
                Xxh3.Hasher h = new Xxh3.Hasher();
                for (long done = 0; done < len; done += VERIFY_CHUNK) {
                    long n = Math.min(VERIFY_CHUNK, len - done);
                    MemorySegment part = chunk.asSlice(0, n);
                    gpu.copyToHost(cudaDevice, buf.pointer(off + done, n), part);
                    h.update(part);
                }
                checkHash(m, loc, e, h.digest());
            }
        }
    }

    private long freeGpuBytes() {
        if (gpu == null) {
            return 0;
        }
        try {
            return Math.max(0, Math.min(gpu.freeBytes(cudaDevice), gpuBudget - gpuBytesHeld.get()));
        } catch (ViperException e) {
            LOG.log(System.Logger.Level.WARNING, "consumer {0}: GPU memory query failed: {1}", model, e.getMessage());
            return 0;
        }
    }

    private long freeHostBytes(long size) {
        // Two buffers per model: the one serving stays, the other must hold the new version.
        long serving = 0;
        for (ReceiveSlot s : slots) {
            if (s.busy()) {
                serving += s.capacity();
            }
        }
        return Math.max(0, hostBudget - serving);
    }

    /** A receive slot no model uses, waiting up to viper.consumer.buffer.wait.ms for leases to close. */
    private ReceiveSlot freeSlot(long size) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(bufferWaitMs);
        synchronized (monitor) {
            while (true) {
                for (ReceiveSlot s : slots) {
                    if (s.tryClaim()) {
                        return s;
                    }
                }
                long left = deadline - System.nanoTime();
                if (left <= 0 || closed) {
                    throw new RetriableViperException(ViperException.Reason.TIMEOUT, "both receive buffers of " + model
                            + " are held by open leases (waited " + bufferWaitMs + " ms)");
                }
                try {
                    monitor.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ViperException(ViperException.Reason.INTERNAL, "interrupted");
                }
            }
        }
    }

    @Override
    public String model() {
        return model;
    }

    @Override
    public ModelLease current() {
        return currentIfAny().orElseThrow(() -> new ViperException(ViperException.Reason.NOT_FOUND, "consumer " + model + " has no model yet"));
    }

    @Override
    public Optional<ModelLease> currentIfAny() {
        while (true) {
            LoadedModel m = current.get();
            if (m == null) {
                return Optional.empty();
            }
            if (m.tryRetain()) {
                return Optional.of(m.lease());
            }
            // Lost a race with a swap that released it: read the newer one.
        }
    }

    @Override
    public long version() {
        LoadedModel m = current.get();
        return m == null ? 0 : m.version();
    }

    @Override
    public void onManifest(Consumer<Manifest> listener) {
        manifestListeners.add(java.util.Objects.requireNonNull(listener, "listener"));
        Manifest last;
        synchronized (monitor) {
            last = known.get(announcedVersion);
        }
        if (last != null) {
            listener.accept(last);
        }
    }

    @Override
    public void onUpdate(Consumer<ModelUpdate> listener) {
        listeners.add(java.util.Objects.requireNonNull(listener, "listener"));
    }

    @Override
    public long awaitVersion(long v, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (monitor) {
            while (completedVersion < v) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new RetriableViperException(ViperException.Reason.TIMEOUT, "consumer " + model + ": v" + v + " did not arrive within "
                            + timeout.toMillis() + " ms (serving v" + completedVersion + ")");
                }
                if (closed) {
                    throw new ViperException(ViperException.Reason.CLOSED, "consumer " + model + " is closed");
                }
                try {
                    monitor.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ViperException(ViperException.Reason.INTERNAL, "interrupted while waiting for " + model + " v" + v);
                }
            }
            return completedVersion;
        }
    }

    @Override
    public TensorSet fetch(long v, Set<String> names) {
        if (closed) {
            throw new ViperException(ViperException.Reason.CLOSED, "consumer " + model + " is closed");
        }
        Manifest m;
        synchronized (monitor) {
            m = known.get(v);
        }
        if (m == null) {
            m = rt.repository().flatMap(r -> r.find(model, v)).orElseThrow(() ->
                    new ViperException(ViperException.Reason.NOT_FOUND, "model " + model + " v" + v + " is not known to this consumer"));
        }
        List<TensorEntry> wanted = new ArrayList<>();
        Set<String> missing = new TreeSet<>(names);
        for (TensorEntry e : m.tensors()) {
            if (missing.remove(e.name())) {
                wanted.add(e);
            }
        }
        if (!missing.isEmpty()) {
            throw new ViperConfigException("model " + model + " v" + v + " has no tensor" + (missing.size() > 1 ? "s " : " ") + String.join(", ", missing));
        }
        long total = 0;
        List<ByteRange> ranges = new ArrayList<>();
        for (TensorEntry e : wanted) {
            ranges.add(new ByteRange(e.info().offset(), e.info().length(), total));
            total += e.info().length();
        }
        PathSelector.Selection sel = PathSelector.select(m, new PathSelector.Capabilities(false, 0, Long.MAX_VALUE, allowedSchemes),
                Providers::transport, rt::clientUnavailable);
        List<String> failures = new ArrayList<>();
        for (PathSelector.Candidate c : sel.usable()) {
            Arena arena = Arena.ofShared();
            try {
                MemorySegment dst = arena.allocate(Math.max(1, total), 64).asSlice(0, total);
                TransportClient client = rt.client(c.location().scheme()).orElseThrow();
                client.read(m, c.location(), ranges, dst);
                List<Tensor> tensors = new ArrayList<>();
                for (int i = 0; i < wanted.size(); i++) {
                    TensorEntry e = wanted.get(i);
                    MemorySegment slice = dst.asSlice(ranges.get(i).destinationOffset(), e.info().length());
                    checkHash(m, c.location(), e, Xxh3.hash128(slice));
                    tensors.add(new Tensor(e.info().withOffset(ranges.get(i).destinationOffset()), slice));
                }
                rt.metrics().bytes(model, c.location().scheme(), total);
                return new FetchedTensors(v, c.location(), total, tensors, arena);
            } catch (RuntimeException e) {
                arena.close();
                failures.add(c.location().uri() + ": " + e.getMessage());
                rt.metrics().fallback(model, c.location().scheme());
            }
        }
        throw new RetriableViperException(ViperException.Reason.TRANSFER, "could not fetch " + names + " of " + model + " v" + v + ": "
                + (failures.isEmpty() ? sel.describe() : String.join("; ", failures)));
    }

    @Override
    public void close() {
        synchronized (monitor) {
            if (closed) {
                return;
            }
            closed = true;
            monitor.notifyAll();
        }
        subscription.close();
        fetcher.interrupt();
        try {
            fetcher.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        LoadedModel m = current.getAndSet(null);
        if (m != null) {
            m.releaseRef();
        }
        for (ReceiveSlot s : slots) {
            s.closeWhenFree();
        }
        onClose.run();
    }

    /**
     * One receive buffer. Claimed by the fetch thread to receive into; released when the model in it
     * is released (last lease closed) or the receive failed. The arena is replaced only while free.
     */
    private final class ReceiveSlot {
        private final int index;
        private Arena arena;
        private MemorySegment memory;
        private boolean busy;
        private boolean closeWhenFree;

        ReceiveSlot(int index) {
            this.index = index;
        }

        boolean busy() {
            synchronized (monitor) {
                return busy;
            }
        }

        long capacity() {
            synchronized (monitor) {
                return memory == null ? 0 : memory.byteSize();
            }
        }

        /** Caller holds the monitor. */
        boolean tryClaim() {
            if (busy) {
                return false;
            }
            busy = true;
            return true;
        }

        /** The buffer, grown to {@code size} if needed (only the claimant calls this). */
        MemorySegment segment(long size) {
            synchronized (monitor) {
                if (memory == null || memory.byteSize() < size) {
                    if (arena != null) {
                        arena.close();
                    }
                    arena = Arena.ofShared();
                    memory = arena.allocate(Math.max(1, size), 4096);
                    LOG.log(System.Logger.Level.DEBUG, "consumer {0}: receive buffer {1} is {2} bytes", model, index, size);
                }
                return memory.asSlice(0, size);
            }
        }

        void release() {
            synchronized (monitor) {
                busy = false;
                if (closeWhenFree && arena != null) {
                    arena.close();
                    arena = null;
                    memory = null;
                }
                monitor.notifyAll();
            }
        }

        void closeWhenFree() {
            synchronized (monitor) {
                closeWhenFree = true;
                if (!busy && arena != null) {
                    arena.close();
                    arena = null;
                    memory = null;
                }
            }
        }
    }

    /** Tensors fetched on their own, in an arena this set owns. */
    private record FetchedTensors(long version, Location location, long bytes, List<Tensor> tensors, Arena arena) implements TensorSet {
        @Override
        public Tensor tensor(String name) {
            for (Tensor t : tensors) {
                if (t.name().equals(name)) {
                    return t;
                }
            }
            throw new ViperException(ViperException.Reason.NOT_FOUND, "tensor '" + name + "' was not fetched");
        }

        @Override
        public void close() {
            arena.close();
        }
    }
}
