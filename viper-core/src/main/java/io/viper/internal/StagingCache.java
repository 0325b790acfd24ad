package io.viper.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.manifest.Manifest;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.StagingAllocator;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The producer's host staging buffers: keeps the newest {@code keepVersions} versions readable and
 * recycles an older buffer only once no read lease holds it (DESIGN.md section 4).
 *
 * <p>Buffer states: FREE (reusable), STAGED (serving: leases granted), RETIRING (older than the
 * newest kept versions: no new leases; becomes FREE when its last lease closes, after transports
 * withdrew it). Thread-safe; {@link #acquire} runs on the training thread and may wait.
 */
final class StagingCache implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(StagingCache.class.getName());

    private final String model;
    private final long budgetBytes;
    private final int keepVersions;
    private final long waitMillis;
    private final Consumer<Buffer> onRetire;
    private final StagingAllocator allocator;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition released = lock.newCondition();
    private final List<Buffer> buffers = new ArrayList<>();
    private long allocatedBytes;
    private boolean closed;

    /**
     * @param onRetire called (outside the lock) when a buffer leaves service, before it may be reused,
     *                 so that transports withdraw it
     */
    StagingCache(String model, long budgetBytes, int keepVersions, long waitMillis, Consumer<Buffer> onRetire, StagingAllocator allocator) {
        this.allocator = allocator;
        this.model = model;
        this.budgetBytes = budgetBytes;
        this.keepVersions = keepVersions;
        this.waitMillis = waitMillis;
        this.onRetire = onRetire;
    }

    /**
     * A buffer of at least {@code size} bytes for {@code version}, reusing a free one, else allocating
     * within the budget, else waiting for leases on retired versions to close.
     */
    Buffer acquire(long version, long size) {
        List<Buffer> retired = new ArrayList<>();
        Buffer result;
        lock.lock();
        try {
            if (closed) {
                throw new ViperException(ViperException.Reason.CLOSED, "producer of " + model + " is closed");
            }
            if (size > budgetBytes) {
                throw new ViperException(ViperException.Reason.CONFIG, "model " + model + " needs " + size
                        + " bytes of staging but viper.producer.staging.budget.bytes is " + budgetBytes);
            }
            retireOlderThanKept(retired);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
            while (true) {
                result = takeFree(size);
                if (result != null) {
                    break;
                }
                // Free buffers too small to reuse go back to the allocator when that makes room.
                long freeSmall = buffers.stream().filter(b -> b.state == State.FREE).mapToLong(b -> b.capacity).sum();
                if (allocatedBytes - freeSmall + size <= budgetBytes) {
                    buffers.removeIf(b -> {
                        if (b.state == State.FREE && allocatedBytes + size > budgetBytes) {
                            allocatedBytes -= b.capacity;
                            b.free();
                            b.closeDevice();
                            return true;
                        }
                        return false;
                    });
                }
                if (allocatedBytes + size <= budgetBytes) {
                    result = new Buffer(this, size);
                    buffers.add(result);
                    allocatedBytes += size;
                    break;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new RetriableViperException(ViperException.Reason.TIMEOUT, "staging for " + model + " v" + version
                            + " is full: every buffer is leased by consumers (budget " + budgetBytes + " bytes); waited " + waitMillis + " ms");
                }
                try {
                    released.awaitNanos(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ViperException(ViperException.Reason.INTERNAL, "interrupted while waiting for a staging buffer for " + model);
                }
                if (closed) {
                    throw new ViperException(ViperException.Reason.CLOSED, "producer of " + model + " is closed");
                }
            }
            result.prepare(version, size);
        } finally {
            lock.unlock();
        }
        retired.forEach(onRetire);
        return result;
    }

    /** Marks {@code b} as serving (leases may be taken) and retires versions beyond the newest kept. */
    void activate(Buffer b) {
        List<Buffer> retired = new ArrayList<>();
        lock.lock();
        try {
            b.state = State.STAGED;
            retireOlderThanKept(retired);
        } finally {
            lock.unlock();
        }
        retired.forEach(onRetire);
    }

    /** Gives a buffer whose publish failed back to the pool. */
    void abandon(Buffer b) {
        lock.lock();
        try {
            b.state = b.leases == 0 ? State.FREE : State.RETIRING;
            b.retiredHandled = true;
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Buffers currently staged (serving), newest first. */
    List<Buffer> staged() {
        lock.lock();
        try {
            return buffers.stream().filter(b -> b.state == State.STAGED).sorted(Comparator.comparingLong((Buffer b) -> b.version).reversed()).toList();
        } finally {
            lock.unlock();
        }
    }

    private void retireOlderThanKept(List<Buffer> retired) {
        List<Buffer> staged = buffers.stream().filter(b -> b.state == State.STAGED)
                .sorted(Comparator.comparingLong((Buffer b) -> b.version).reversed()).toList();
        for (int i = keepVersions; i < staged.size(); i++) {
            Buffer old = staged.get(i);
            old.state = State.RETIRING;
            retired.add(old);
            LOG.log(System.Logger.Level.DEBUG, "{0} v{1}: retiring staging buffer ({2} open leases)", model, old.version, old.leases);
        }
    }

    private Buffer takeFree(long size) {
        Buffer best = null;
        for (Buffer b : buffers) {
            if (b.state == State.RETIRING && b.leases == 0 && b.retiredHandled) {
                b.state = State.FREE;
            }
            if (b.state == State.FREE && b.capacity >= size && (best == null || b.capacity < best.capacity)) {
                best = b;
            }
        }
        if (best != null) {
            best.state = State.FILLING;
        }
        return best;
    }

    private void onLeaseClosed(Buffer b) {
        lock.lock();
        try {
            b.leases--;
            if (b.leases == 0) {
                released.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    private void onRetireHandled(Buffer b) {
        lock.lock();
        try {
            b.retiredHandled = true;
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Frees every buffer; called when the producer closes, after transports stopped. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            // Remote readers may still be copying out of these buffers: give them a moment.
            for (Buffer b : buffers) {
                if (b.state == State.STAGED) {
                    b.state = State.RETIRING;
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (buffers.stream().anyMatch(b -> b.leases > 0) && System.nanoTime() < deadline) {
                try {
                    released.await(50, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            for (Buffer b : buffers) {
                if (b.leases > 0) {
                    LOG.log(System.Logger.Level.WARNING, "{0} v{1}: closing staging buffer with {2} open leases", model, b.version, b.leases);
                }
                b.state = State.FREE;
                b.free();
                b.closeDevice();
            }
            buffers.clear();
            allocatedBytes = 0;
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }

    enum State { FREE, FILLING, STAGED, RETIRING }

    /** A version's view of a buffer's GPU staging memory; the buffer owns the memory, so close does nothing. */
    private record DeviceView(int device, long devicePointer, long byteSize) implements DeviceBuffer {
        @Override
        public void close() {
        }
    }

    /** One staging buffer; the transports see it as a {@link StagedCheckpoint}. */
    static final class Buffer implements StagedCheckpoint {
        private final StagingCache cache;
        private final AutoCloseable owner;
        private final long capacity;
        private final MemorySegment memory;
        private long version;
        private long size;
        private volatile Manifest manifest;
        private DeviceBuffer deviceMemory;
        private volatile DeviceBuffer deviceView;
        /** The page-locked registration of {@link #memory}, made on the first GPU copy; null if none. */
        private GpuProvider.PinnedHost pinned;
        /** Why pinning failed, so that it is tried (and logged) once per buffer. */
        private String pinFailure;
        private State state = State.FILLING;
        private int leases;
        private boolean retiredHandled;

        Buffer(StagingCache cache, long capacity) {
            this.cache = cache;
            this.capacity = capacity;
            if (cache.allocator != null) {
                StagingAllocator.Memory m = cache.allocator.allocate(Math.max(1, capacity));
                this.owner = m;
                this.memory = m.segment();
            } else {
                Arena arena = Arena.ofShared();
                this.owner = arena;
                // Whole pages: the buffer may be page-locked for GPU copies, and pinning works on pages.
                long pages = (Math.max(1, capacity) + 4095) & ~4095L;
                this.memory = arena.allocate(pages, 4096).asSlice(0, Math.max(1, capacity));
            }
        }

        void free() {
            unpin();
            try {
                owner.close();
            } catch (Exception e) {
                LOG.log(System.Logger.Level.WARNING, "freeing a staging buffer of " + cache.model + " failed: " + e.getMessage());
            }
        }

        /**
         * Page-locks this buffer's host memory for copies to and from GPU {@code device} (by the one
         * thread filling it: the training thread, or the background thread for a GPU-staged version);
         * done once per buffer, which keeps it pinned until freed. Returns null
         * when the memory is pinned, else why it stays pageable (the driver refused).
         */
        String pinHost(GpuProvider gpu, int device) {
            if (pinned == null && pinFailure == null) {
                try {
                    pinned = gpu.pinHost(device, memory);
                } catch (ViperException | IllegalArgumentException e) {
                    pinFailure = e.getMessage();
                    LOG.log(System.Logger.Level.WARNING, "{0}: a staging buffer of {1} bytes stays in pageable memory, so GPU copies of it are slower: {2}",
                            cache.model, capacity, e.getMessage());
                }
            }
            return pinned != null ? null : pinFailure;
        }

        private void unpin() {
            if (pinned != null) {
                try {
                    pinned.close();
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "unpinning a staging buffer of " + cache.model + " failed: " + e.getMessage());
                }
                pinned = null;
            }
        }

        void prepare(long newVersion, long newSize) {
            this.version = newVersion;
            this.size = newSize;
            this.manifest = null;
            this.deviceView = null;
            this.retiredHandled = false;
            this.state = State.FILLING;
        }

        /** The writable bytes for the copy (training thread, before activation). */
        MemorySegment writable() {
            return memory.asSlice(0, size);
        }

        void manifest(Manifest m) {
            this.manifest = m;
        }

        /**
         * GPU staging memory of at least {@code size} bytes on {@code device} for this version (training
         * thread, while FILLING): the previous allocation is reused when it fits, else replaced. The
         * version is served from it once {@link #deviceStaged()} was called.
         */
        DeviceBuffer deviceMemory(GpuProvider gpu, int device, long size) {
            if (deviceMemory != null && (deviceMemory.device() != device || deviceMemory.byteSize() < size)) {
                closeDevice();
            }
            if (deviceMemory == null) {
                deviceMemory = gpu.allocate(device, Math.max(1, size));
            }
            return deviceMemory;
        }

        /** This version's bytes are (or will be, before activation) in {@link #deviceMemory} too. */
        void deviceStaged() {
            DeviceBuffer d = deviceMemory;
            deviceView = new DeviceView(d.device(), d.devicePointer(), size);
        }

        void closeDevice() {
            if (deviceMemory != null) {
                deviceMemory.close();
                deviceMemory = null;
                deviceView = null;
            }
        }

        @Override
        public Optional<DeviceBuffer> device() {
            return Optional.ofNullable(deviceView);
        }

        /** Transports were told to withdraw this retired buffer; it may be reused once leases close. */
        void retireHandled() {
            cache.onRetireHandled(this);
        }

        @Override
        public String model() {
            return cache.model;
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
            cache.lock.lock();
            try {
                if (state != State.STAGED) {
                    return null;
                }
                leases++;
            } finally {
                cache.lock.unlock();
            }
            AtomicBoolean closed = new AtomicBoolean();
            return () -> {
                if (closed.compareAndSet(false, true)) {
                    cache.onLeaseClosed(this);
                }
            };
        }

        /** A lease for the producer's own background work (PFS flush) that ignores the state. */
        ReadLease internalLease() {
            cache.lock.lock();
            try {
                leases++;
            } finally {
                cache.lock.unlock();
            }
            AtomicBoolean closed = new AtomicBoolean();
            return () -> {
                if (closed.compareAndSet(false, true)) {
                    cache.onLeaseClosed(this);
                }
            };
        }

        @Override
        public String toString() {
            return "staged " + cache.model + " v" + version + " (" + size + " bytes)";
        }
    }
}
