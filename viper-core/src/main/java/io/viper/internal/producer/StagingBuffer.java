package io.viper.internal.producer;

import io.viper.manifest.Manifest;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.StagingAllocator;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One staging buffer of a producer: host memory holding one version at a time, and the GPU memory
 * that goes with it ({@link StagingGpuMemory}). Transports see it as a {@link StagedCheckpoint} and
 * read it under {@link #tryLease() leases}.
 *
 * <p>Owned by its {@link StagingCache}, which moves it between states under the cache's lock
 * (the fields marked so) and frees it. The training thread fills it while FILLING (the background
 * thread too, for a GPU-staged version); transport threads read it while STAGED.
 */
final class StagingBuffer implements StagedCheckpoint {
    private static final System.Logger LOG = System.getLogger(StagingBuffer.class.getName());

    private final StagingCache cache;
    private final AutoCloseable owner;
    final long capacity;
    private final MemorySegment memory;
    private final StagingGpuMemory gpu;
    private volatile Manifest manifest;
    /** Guarded by the cache's lock. */
    long version;
    private long size;
    /** Guarded by the cache's lock. */
    StagingCache.State state = StagingCache.State.FILLING;
    /** Open read leases; guarded by the cache's lock. */
    int leases;
    /** Whether transports were told to withdraw it since it retired (after its last lease closed); guarded by the cache's lock. */
    boolean withdrawing;
    /** Whether transports withdrew it since it retired; guarded by the cache's lock. */
    boolean retiredHandled;
    /**
     * What it holds once its version's hashes completed, for a later version's copy to compare with;
     * null while it is written or after a failure. Guarded by the cache's lock.
     */
    StagedContent held;

    /** Allocates {@code capacity} bytes, from the transport's allocator when there is one. */
    StagingBuffer(StagingCache cache, long capacity, StagingAllocator allocator) {
        this.cache = cache;
        this.capacity = capacity;
        if (allocator != null) {
            StagingAllocator.Memory m = allocator.allocate(Math.max(1, capacity));
            this.owner = m;
            this.memory = m.segment();
        } else {
            Arena arena = Arena.ofShared();
            this.owner = arena;
            // Whole pages: the buffer may be page-locked for GPU copies, and pinning works on pages.
            long pages = (Math.max(1, capacity) + 4095) & ~4095L;
            this.memory = arena.allocate(pages, 4096).asSlice(0, Math.max(1, capacity));
        }
        this.gpu = new StagingGpuMemory(cache.model(), memory);
    }

    /** Frees the host memory and the GPU memory that goes with it. */
    void free() {
        gpu.close();
        try {
            owner.close();
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "freeing a staging buffer of " + cache.model() + " failed: " + e.getMessage());
        }
    }

    /** Makes the buffer hold {@code newVersion} of {@code newSize} bytes; under the cache's lock. */
    void prepare(long newVersion, long newSize) {
        this.version = newVersion;
        this.size = newSize;
        this.held = null; // it is about to be written
        this.manifest = null;
        this.withdrawing = false;
        this.retiredHandled = false;
        this.state = StagingCache.State.FILLING;
        gpu.newVersion();
    }

    /** The writable bytes for the copy (training thread, before activation). */
    MemorySegment writable() {
        return memory.asSlice(0, size);
    }

    /** The GPU memory that goes with this buffer (its pinning and GPU staging copy). */
    StagingGpuMemory gpu() {
        return gpu;
    }

    /** This version's bytes are (or will be, before activation) in the GPU staging memory too. */
    void deviceStaged() {
        gpu.staged(size);
    }

    void manifest(Manifest m) {
        this.manifest = m;
    }

    @Override
    public Optional<DeviceBuffer> device() {
        return gpu.view();
    }

    /** Transports were told to withdraw this retired buffer; it may be reused once leases close. */
    void retireHandled() {
        cache.onRetireHandled(this);
    }

    @Override
    public String model() {
        return cache.model();
    }

    @Override
    public long version() {
        return version;
    }

    @Override
    public Manifest manifest() {
        return manifest;
    }

    @Override
    public MemorySegment data() {
        return memory.asSlice(0, size).asReadOnly();
    }

    @Override
    public ReadLease tryLease() {
        return cache.lease(this, true) ? closer() : null;
    }

    /** A lease for the producer's own background work (PFS flush) that ignores the state. */
    ReadLease internalLease() {
        cache.lease(this, false);
        return closer();
    }

    private ReadLease closer() {
        AtomicBoolean closed = new AtomicBoolean();
        return () -> {
            if (closed.compareAndSet(false, true)) {
                cache.onLeaseClosed(this);
            }
        };
    }

    @Override
    public String toString() {
        return "staged " + cache.model() + " v" + version + " (" + size + " bytes)";
    }
}
