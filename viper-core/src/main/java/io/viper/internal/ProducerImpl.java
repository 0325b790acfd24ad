package io.viper.internal;

import io.viper.spi.Providers;
import io.viper.CheckpointPolicy;
import io.viper.PublishHandle;
import io.viper.Snapshot;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.hash.ContentHash;
import io.viper.hash.ParallelHash64;
import io.viper.hash.Xxh3;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.spi.ReadLease;
import io.viper.spi.TransportServer;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * The producer of one model. The training thread copies tensors into a staging buffer (GPU tensors
 * device to device into GPU staging memory when the GPU has room, see {@code stage}); a single
 * background thread (so that versions are announced in order) hashes them, exposes the buffer on
 * the transports, announces the manifest, and flushes it to the PFS, then announces again with the
 * PFS location.
 */
final class ProducerImpl implements ViperProducer {
    private static final System.Logger LOG = System.getLogger(ProducerImpl.class.getName());
    /** GPU memory left free when staging there (kernels and the framework need some). */
    private static final long GPU_HEADROOM = 256L << 20;
    private static final ValueLayout.OfFloat LE_FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final ViperRuntime rt;
    private final String model;
    private final CheckpointPolicy policy;
    private final StagingCache cache;
    private final ExecutorService background;
    private final List<TransportServer> servers;
    private final Notifier notifier;
    private final Optional<CheckpointRepository> repository;
    private final Runnable onClose;
    private long lastIteration = Long.MIN_VALUE;
    private long version;
    private volatile boolean closed;

    ProducerImpl(ViperRuntime rt, String model, CheckpointPolicy policy, Runnable onClose) {
        this.rt = rt;
        this.model = Manifest.validateModelName(model);
        this.policy = Objects.requireNonNull(policy, "policy");
        this.onClose = onClose;
        ViperConfig c = rt.config();
        this.servers = rt.servers();
        this.notifier = rt.notifier(NotifierProvider.Role.PRODUCER);
        this.repository = rt.repository();
        this.version = repository.flatMap(r -> r.latest(model)).map(Manifest::version).orElse(0L);
        this.cache = new StagingCache(model, c.get(ViperConfig.STAGING_BUDGET), c.get(ViperConfig.STAGING_VERSIONS),
                c.get(ViperConfig.STAGING_WAIT_MS), this::withdraw,
                servers.stream().flatMap(srv -> srv.stagingAllocator().stream()).findFirst().orElse(null));
        this.background = Executors.newSingleThreadExecutor(r -> Thread.ofPlatform().daemon().name("viper-producer-" + model).unstarted(r));
        LOG.log(System.Logger.Level.INFO, "producer {0}: policy {1}, notifier {2}, transports {3}{4}", model, policy.describe(),
                notifier.uri(), servers.stream().map(s -> s.location().uri().toString()).toList(),
                repository.isPresent() ? ", PFS " + c.get(ViperConfig.PFS_ROOT).orElseThrow() : "");
    }

    @Override
    public String model() {
        return model;
    }

    @Override
    public synchronized Optional<PublishHandle> step(long iteration, double loss, Snapshot snapshot) {
        ensureOpen();
        if (iteration <= lastIteration) {
            throw new ViperConfigException("producer " + model + ": iteration " + iteration + " does not follow " + lastIteration);
        }
        lastIteration = iteration;
        if (!policy.shouldPublish(iteration, loss)) {
            return Optional.empty();
        }
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put(Checkpoint.META_ITERATION, Long.toString(iteration));
        meta.put(Checkpoint.META_LOSS, Double.toString(loss));
        return Optional.of(publish(snapshot, meta));
    }

    @Override
    public PublishHandle publish(Checkpoint checkpoint) {
        return publish(Snapshot.of(checkpoint), checkpoint.metadata());
    }

    @Override
    public synchronized PublishHandle publish(Snapshot snapshot, Map<String, String> metadata) {
        ensureOpen();
        long publishedAt = System.currentTimeMillis();
        // The stall counts everything the training thread waits for: describing the snapshot too.
        long t0 = System.nanoTime();
        List<Source> sources = collect(snapshot);
        long total = 0;
        List<TensorInfo> infos = new ArrayList<>(sources.size());
        for (Source s : sources) {
            TensorInfo info = new TensorInfo(s.name, s.dtype, s.shape, total, s.byteSize());
            infos.add(info);
            total = Math.addExact(total, info.length());
        }
        long v = version + 1;
        StagingCache.Buffer buffer = cache.acquire(v, total);
        MemorySegment dst = buffer.writable();
        boolean onGpu;
        // Host tensors are hashed on the hash pool as soon as they are copied, overlapping the copy.
        List<Future<ContentHash>> hashes = new ArrayList<>(sources.size());
        try {
            onGpu = stage(sources, infos, buffer, dst, total, v, hashes);
        } catch (RuntimeException e) {
            hashes.forEach(f -> f.cancel(false));
            cache.abandon(buffer);
            throw e;
        }
        long stall = System.nanoTime() - t0;
        version = v;
        rt.metrics().stall(model, stall);
        LinkedHashMap<String, String> meta = new LinkedHashMap<>(metadata);
        meta.putIfAbsent(Checkpoint.META_PRODUCER, rt.producerId());
        meta.putIfAbsent(Checkpoint.META_WALL_TIME, Long.toString(publishedAt));
        CompletableFuture<Manifest> announced = new CompletableFuture<>();
        CompletableFuture<Manifest> durable = new CompletableFuture<>();
        background.execute(() -> finish(buffer, v, sources, infos, onGpu, hashes, meta, publishedAt, announced, durable));
        return new PublishHandle(model, v, stall, announced, durable);
    }

    /**
     * The training stall: copies every tensor into the staging buffer. Tensors on a GPU go device to
     * device into GPU staging memory when the GPU has room (the host copy of them is made in the
     * background), else device to host. Returns whether this version is staged on the GPU.
     */
    private boolean stage(List<Source> sources, List<TensorInfo> infos, StagingCache.Buffer buffer, MemorySegment dst, long total, long v,
                          List<Future<ContentHash>> hashes) {
        Source firstDevice = sources.stream().filter(Source::onDevice).findFirst().orElse(null);
        if (firstDevice == null) {
            for (int i = 0; i < sources.size(); i++) {
                TensorInfo info = infos.get(i);
                sources.get(i).copyTo(dst, info.offset());
                MemorySegment slice = dst.asSlice(info.offset(), info.length());
                hashes.add(rt.hashPool().submit(() -> Xxh3.hash128(slice)));
            }
            return false;
        }
        GpuProvider g = gpu();
        int dev = firstDevice.device;
        long free = g.freeBytes(dev);
        boolean onGpu = free >= total + GPU_HEADROOM;
        if (onGpu) {
            DeviceBuffer db = buffer.deviceMemory(g, dev, total);
            for (int i = 0; i < sources.size(); i++) {
                Source s = sources.get(i);
                TensorInfo info = infos.get(i);
                if (s.onDevice()) {
                    g.copyDeviceToDevice(s.device, s.devicePointer, db.pointer(info.offset(), info.length()), info.length());
                } else {
                    s.copyTo(dst, info.offset());
                }
            }
            buffer.deviceStaged();
        } else {
            // Pinned once per buffer, so that this copy (the stall) runs at DMA speed from the next version on.
            String pageable = buffer.pinHost(g, dev);
            LOG.log(System.Logger.Level.INFO, "producer {0} v{1}: staging in {2} host memory: CUDA device {3} has {4} bytes free, the model needs {5}",
                    model, v, pageable == null ? "pinned" : "pageable", dev, free, total + GPU_HEADROOM);
            for (int i = 0; i < sources.size(); i++) {
                Source s = sources.get(i);
                TensorInfo info = infos.get(i);
                if (s.onDevice()) {
                    g.copyToHost(s.device, s.devicePointer, dst.asSlice(info.offset(), info.length()));
                } else {
                    s.copyTo(dst, info.offset());
                }
            }
        }
        return onGpu;
    }

    /** The GPU provider; throws {@code UNAVAILABLE} with the reason when CUDA does not work here. */
    private GpuProvider gpu() {
        GpuProvider g = Providers.gpu().orElseThrow(() -> new ViperException(ViperException.Reason.UNAVAILABLE,
                "no CUDA driver/device: no GPU provider installed (is viper-transfer on the class path?)"));
        Optional<String> why = g.unavailableReason();
        if (why.isPresent()) {
            throw new ViperException(ViperException.Reason.UNAVAILABLE, why.get());
        }
        return g;
    }

    /** Background: hash, expose, announce, flush, announce again with the PFS location. */
    private void finish(StagingCache.Buffer buffer, long v, List<Source> sources, List<TensorInfo> infos, boolean onGpu,
                        List<Future<ContentHash>> earlyHashes,
                        LinkedHashMap<String, String> meta, long publishedAt,
                        CompletableFuture<Manifest> announced, CompletableFuture<Manifest> durable) {
        Manifest manifest;
        try {
            if (onGpu) {
                // The host copy of a GPU-staged version: GPU tensors down, host tensors up. Pinning
                // happens here, off the training thread, once per buffer.
                DeviceBuffer db = buffer.device().orElseThrow();
                MemorySegment host = buffer.writable();
                GpuProvider g = gpu();
                buffer.pinHost(g, db.device());
                for (int i = 0; i < infos.size(); i++) {
                    TensorInfo info = infos.get(i);
                    MemorySegment slice = host.asSlice(info.offset(), info.length());
                    long ptr = db.pointer(info.offset(), info.length());
                    if (sources.get(i).onDevice()) {
                        g.copyToHost(db.device(), ptr, slice);
                    } else {
                        g.copyToDevice(db.device(), slice, ptr);
                    }
                }
            }
            MemorySegment data = buffer.data();
            List<MemorySegment> slices = infos.stream().map(i -> data.asSlice(i.offset(), i.length())).toList();
            boolean gpuServed = servers.stream().anyMatch(s -> s.location().tier() == Tier.GPU);
            List<Future<Long>> phashes = new ArrayList<>();
            if (gpuServed && onGpu) {
                // On the device: the GPU staging copy is what GPU consumers read.
                DeviceBuffer db = buffer.device().orElseThrow();
                GpuProvider g = gpu();
                for (TensorInfo i : infos) {
                    phashes.add(CompletableFuture.completedFuture(g.hash64(db.device(), db.pointer(i.offset(), i.length()), i.length())));
                }
            } else if (gpuServed) {
                for (MemorySegment s : slices) {
                    phashes.add(rt.hashPool().submit(() -> ParallelHash64.hash(s)));
                }
            }
            ContentHash[] hashes = new ContentHash[infos.size()];
            if (earlyHashes.size() == infos.size()) {
                for (int i = 0; i < hashes.length; i++) {
                    hashes[i] = join(earlyHashes.get(i));
                }
            } else {
                hashes = Xxh3.hashAll(slices, rt.hashPool());
            }
            List<TensorEntry> entries = new ArrayList<>(infos.size());
            for (int i = 0; i < infos.size(); i++) {
                entries.add(new TensorEntry(infos.get(i), hashes[i], gpuServed ? OptionalLong.of(join(phashes.get(i))) : OptionalLong.empty()));
            }
            manifest = new Manifest(model, v, rt.producerId(), publishedAt, meta, entries, List.of());
            buffer.manifest(manifest);
            cache.activate(buffer);
            List<Location> locations = new ArrayList<>();
            for (TransportServer s : servers) {
                s.expose(buffer);
                locations.add(s.location());
            }
            manifest = manifest.replaceLocations(locations);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "producer " + model + " v" + v + ": staging failed: " + e.getMessage(), e);
            cache.abandon(buffer);
            announced.completeExceptionally(e);
            durable.completeExceptionally(e);
            return;
        }
        if (!servers.isEmpty() || repository.isEmpty()) {
            try {
                notifier.publish(manifest);
                rt.metrics().published(model);
                announced.complete(manifest);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "producer {0} v{1}: announcing failed: {2}", model, v, e.getMessage());
                announced.completeExceptionally(e);
            }
        }
        if (repository.isEmpty()) {
            durable.complete(manifest);
            return;
        }
        try (ReadLease lease = buffer.internalLease()) {
            Location file = repository.get().store(manifest, buffer);
            Manifest withFile = manifest.withLocations(List.of(file));
            notifier.publish(withFile);
            if (!announced.isDone()) {
                rt.metrics().published(model);
                announced.complete(withFile);
            }
            durable.complete(withFile);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "producer {0} v{1}: PFS flush failed: {2}", model, v, e.getMessage());
            announced.completeExceptionally(e);
            durable.completeExceptionally(e);
        }
    }

    private static <T> T join(Future<T> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ViperException(ViperException.Reason.INTERNAL, "interrupted while hashing");
        } catch (ExecutionException e) {
            throw new ViperException(ViperException.Reason.INTERNAL, "hashing failed: " + e.getCause(), e.getCause());
        }
    }

    private void withdraw(StagingCache.Buffer buffer) {
        for (TransportServer s : servers) {
            try {
                s.withdraw(buffer);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "withdrawing " + buffer + " from " + s.location() + " failed: " + e.getMessage());
            }
        }
        buffer.retireHandled();
    }

    private List<Source> collect(Snapshot snapshot) {
        List<Source> sources = new ArrayList<>();
        Set<String> names = new HashSet<>();
        snapshot.describe(new Snapshot.TensorSink() {
            @Override
            public void add(String name, DType dtype, long[] shape, MemorySegment data) {
                Objects.requireNonNull(data, "data of tensor " + name);
                Source s = new Source(checkName(name, names), Objects.requireNonNull(dtype, "dtype of " + name), shape.clone(), data, null, 0, -1);
                if (s.byteSize() != data.byteSize()) {
                    throw new ViperConfigException("tensor " + name + ": " + dtype + " x " + java.util.Arrays.toString(shape) + " needs "
                            + s.byteSize() + " bytes but the segment has " + data.byteSize());
                }
                sources.add(s);
            }

            @Override
            public void addFloats(String name, long[] shape, float[] values) {
                Objects.requireNonNull(values, "values of tensor " + name);
                Source s = new Source(checkName(name, names), DType.F32, shape.clone(), null, values, 0, -1);
                if (TensorInfo.elementCount(shape) != values.length) {
                    throw new ViperConfigException("tensor " + name + ": shape " + java.util.Arrays.toString(shape) + " holds "
                            + TensorInfo.elementCount(shape) + " elements but " + values.length + " floats were given");
                }
                sources.add(s);
            }

            @Override
            public void addDevice(String name, DType dtype, long[] shape, long devicePointer, int device) {
                GpuProvider g = gpu();
                if (devicePointer == 0) {
                    throw new ViperConfigException("tensor " + name + ": device pointer is null");
                }
                if (device < 0 || device >= g.deviceCount()) {
                    throw new ViperConfigException("tensor " + name + ": CUDA device " + device + " does not exist (" + g.deviceCount() + " visible)");
                }
                if (!sources.isEmpty() && sources.stream().anyMatch(o -> o.onDevice() && o.device != device)) {
                    throw new ViperConfigException("tensor " + name + ": a snapshot's GPU tensors must all be on one device");
                }
                Source s = new Source(checkName(name, names), Objects.requireNonNull(dtype, "dtype of " + name), shape.clone(), null, null,
                        devicePointer, device);
                s.byteSize();
                sources.add(s);
            }
        });
        return sources;
    }

    private static String checkName(String name, Set<String> seen) {
        if (name == null || name.isEmpty()) {
            throw new ViperConfigException("tensor name must not be empty");
        }
        if (!seen.add(name)) {
            throw new ViperConfigException("duplicate tensor name '" + name + "' in snapshot");
        }
        return name;
    }

    @Override
    public synchronized long latestVersion() {
        return version;
    }

    @Override
    public void flush() {
        try {
            background.submit(() -> { }).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ViperException(ViperException.Reason.INTERNAL, "interrupted while flushing producer " + model);
        } catch (ExecutionException | java.util.concurrent.RejectedExecutionException e) {
            throw new ViperException(ViperException.Reason.CLOSED, "producer " + model + " is closed");
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new ViperException(ViperException.Reason.CLOSED, "producer " + model + " is closed");
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        background.shutdown();
        try {
            if (!background.awaitTermination(60, TimeUnit.SECONDS)) {
                LOG.log(System.Logger.Level.WARNING, "producer {0}: background work did not finish in 60 s", model);
                background.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (StagingCache.Buffer b : cache.staged()) {
            for (TransportServer s : servers) {
                try {
                    s.withdraw(b);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.DEBUG, "withdraw on close failed: " + e.getMessage());
                }
            }
        }
        cache.close();
        onClose.run();
    }

    /** One tensor to copy: from a segment, a float array, or GPU memory ({@code device >= 0}). */
    private record Source(String name, DType dtype, long[] shape, MemorySegment segment, float[] floats, long devicePointer, int device) {
        boolean onDevice() {
            return device >= 0;
        }

        long byteSize() {
            try {
                return TensorInfo.byteSize(dtype, shape);
            } catch (ArithmeticException e) {
                throw new ViperConfigException("tensor " + name + ": shape " + java.util.Arrays.toString(shape) + " overflows 64 bits");
            }
        }

        void copyTo(MemorySegment dst, long offset) {
            if (segment != null) {
                MemorySegment.copy(segment, 0, dst, offset, segment.byteSize());
            } else {
                MemorySegment.copy(floats, 0, dst, LE_FLOAT, offset, floats.length);
            }
        }
    }
}
