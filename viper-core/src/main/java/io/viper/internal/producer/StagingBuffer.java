package io.viper.internal.producer;

import io.viper.internal.memory.MemoryBudget;
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
 * One staging buffer of a producer: host memory holding one version at a time, and the GPU memory that goes with it
 * ({@link StagingGpuMemory}). Transports see it as a {@link StagedCheckpoint} and read it under {@link #tryLease()
 * leases}.
 *
 * <p>Owned by its {@link StagingCache}, which frees it and moves it between its {@link State states} through the
 * transition methods below, under the cache's lock (each checks that the lock is held and that the transition is legal:
 * an illegal one is a bug, an {@link IllegalStateException}). The training thread fills it while FILLING (the
 * background thread too, for a GPU-staged version); transport threads read it while STAGED.
 */
final class StagingBuffer implements StagedCheckpoint {
    private static final System.Logger LOG = System.getLogger(StagingBuffer.class.getName());

    /**
     * FILLING: taken for a version that is being copied and hashed; STAGED: serving, leases granted; RETIRING: older
     * than the newest kept versions, no new leases, withdrawn from the transports once its last lease closed; FREE:
     * reusable.
     */
    enum State {
        FREE,
        FILLING,
        STAGED,
        RETIRING
    }

    private final StagingCache cache;
    private final AutoCloseable owner;
    final long capacity;
    private final MemorySegment memory;
    private final StagingGpuMemory gpu;
    /** Its bytes in the producer's memory budget, given back when it is freed. */
    private final MemoryBudget.Reservation reservation;

    private volatile Manifest manifest;
    private long version;
    private long size;
    // The rest is guarded by the cache's lock and changed only by the transitions below.
    private State state = State.FILLING;
    /** Open read leases. */
    private int leases;
    /** Whether transports were told to withdraw it since it retired (after its last lease closed). */
    private boolean withdrawing;
    /** Whether transports withdrew it since it retired. */
    private boolean retiredHandled;
    /**
     * What it holds once its version's hashes completed, for a later version's copy to compare with; null while it is
     * written or after a failure.
     */
    private StagedContent held;

    /**
     * Allocates {@code capacity} bytes, reserved in {@code reservation}, from the transport's allocator when there is
     * one.
     */
    StagingBuffer(StagingCache cache, long capacity, StagingAllocator allocator, MemoryBudget.Reservation reservation) {
        this.cache = cache;
        this.capacity = capacity;
        this.reservation = reservation;
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
            LOG.log(
                    System.Logger.Level.WARNING,
                    "freeing a staging buffer of " + cache.model() + " failed: " + e.getMessage());
        }
        reservation.close();
    }

    /**
     * Makes the buffer, just taken (FILLING), hold {@code newVersion} of {@code newSize} bytes; under the cache's lock.
     */
    void prepare(long newVersion, long newSize) {
        expect(State.FILLING, "prepare");
        this.version = newVersion;
        this.size = newSize;
        this.held = null; // it is about to be written
        this.manifest = null;
        this.withdrawing = false;
        this.retiredHandled = false;
        gpu.newVersion();
    }

    // Transitions and what they read, under the cache's lock.

    State state() {
        requireLock();
        return state;
    }

    int leases() {
        requireLock();
        return leases;
    }

    /** What it holds for a later version's copy to compare with, or null. */
    StagedContent held() {
        requireLock();
        return held;
    }

    /** FREE to FILLING: taken for a version. */
    void take() {
        move(State.FREE, State.FILLING, "take");
    }

    /** FILLING to STAGED: serving, holding {@code content} (null: nothing a later copy may compare with). */
    void activate(StagedContent content) {
        move(State.FILLING, State.STAGED, "activate");
        this.held = content;
    }

    /**
     * STAGED to RETIRING: no new leases. Returns whether transports are to withdraw it now (no lease is open; else that
     * happens when the last one closes, {@link #leaseClosed}).
     */
    boolean retire() {
        move(State.STAGED, State.RETIRING, "retire");
        if (leases == 0) {
            withdrawing = true;
            return true;
        }
        return false;
    }

    /**
     * Its publish failed (FILLING, or STAGED or RETIRING when it failed after activation): FREE, or RETIRING until its
     * leases close; it forgets what it held (its bytes may be half written).
     */
    void abandon() {
        requireLock();
        if (state == State.FREE) {
            throw illegal("abandon");
        }
        held = null;
        state = leases == 0 ? State.FREE : State.RETIRING;
        retiredHandled = true;
    }

    /** RETIRING to FREE once transports withdrew it and no lease is open; returns whether it is FREE now. */
    boolean reclaimIfWithdrawn() {
        requireLock();
        if (state == State.RETIRING && leases == 0 && retiredHandled) {
            state = State.FREE;
        }
        return state == State.FREE;
    }

    /** Transports withdrew it since it retired. */
    void withdrawn() {
        requireLock();
        retiredHandled = true;
    }

    /** Counts a new read lease; with {@code onlyStaged}, only while STAGED. Returns whether it was granted. */
    boolean lease(boolean onlyStaged) {
        requireLock();
        if (onlyStaged && state != State.STAGED) {
            return false;
        }
        leases++;
        return true;
    }

    /**
     * A read lease closed. Returns whether transports are to withdraw it now: the last lease of a RETIRING buffer not
     * yet withdrawn, unless the cache is {@code closing} (then it frees it).
     */
    boolean leaseClosed(boolean closing) {
        requireLock();
        if (leases == 0) {
            throw illegal("close a lease");
        }
        leases--;
        if (leases == 0 && state == State.RETIRING && !withdrawing && !retiredHandled && !closing) {
            withdrawing = true;
            return true;
        }
        return false;
    }

    /** The cache closes: STAGED to RETIRING, no new leases while readers finish. */
    void retireForClose() {
        if (state() == State.STAGED) {
            state = State.RETIRING;
        }
    }

    /** The cache closes: FREE whatever it was, and its memory freed. */
    void freeForClose() {
        requireLock();
        state = State.FREE;
        free();
    }

    private void move(State expected, State to, String what) {
        expect(expected, what);
        state = to;
    }

    private void expect(State expected, String what) {
        requireLock();
        if (state != expected) {
            throw illegal(what);
        }
    }

    private IllegalStateException illegal(String what) {
        return new IllegalStateException("cannot " + what + " " + this + " while " + state);
    }

    private void requireLock() {
        if (!cache.lockHeld()) {
            throw new IllegalStateException("the staging cache's lock guards " + this);
        }
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
    public void served(long bytes) {
        cache.served(bytes);
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
