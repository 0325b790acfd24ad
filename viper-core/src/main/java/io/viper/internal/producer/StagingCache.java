package io.viper.internal.producer;

import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import io.viper.internal.memory.MemoryBudget;
import io.viper.spi.StagingAllocator;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.LongConsumer;
import java.util.function.Predicate;

/**
 * The producer's host staging buffers: keeps the newest {@code keepVersions} versions readable and recycles an older
 * buffer only once no read lease holds it (docs/architecture.md#memory-ownership-and-leases).
 *
 * <p>Buffer states: FILLING (taken for a version that is being copied and hashed), STAGED (serving: leases granted),
 * RETIRING (older than the newest kept versions: no new leases; once its last lease closed, transports are told to
 * withdraw it, after which it becomes FREE), FREE (reusable). Each {@link StagingBuffer} changes state through its
 * transition methods, under this cache's lock. Every buffer is reserved in the producer's {@link MemoryBudget} (a child
 * of the instance's) while it exists. Thread-safe; {@link #acquire} runs on the training thread and may wait.
 */
final class StagingCache implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(StagingCache.class.getName());

    private final String model;
    private final MemoryBudget budget;
    private final int keepVersions;
    private final long waitMillis;
    private final Consumer<StagingBuffer> onRetire;
    private final StagingAllocator allocator;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition released = lock.newCondition();
    private final List<StagingBuffer> buffers = new ArrayList<>();
    /** Told of bytes transports served from this cache's buffers (the producer's egress metric). */
    private volatile LongConsumer servedBytes = n -> {};

    private boolean closed;
    /** What the newest version activated holds ({@link #newest}). */
    private StagedContent newest;

    /**
     * @param onRetire called (outside the lock) once a retired buffer's last read lease closed, before it may be
     *     reused, so that transports withdraw it and free what they hold for it; on the thread that retired it or
     *     closed that lease; it calls {@link StagingBuffer#retireHandled}
     */
    StagingCache(
            String model,
            long budgetBytes,
            int keepVersions,
            long waitMillis,
            Consumer<StagingBuffer> onRetire,
            StagingAllocator allocator) {
        this(
                model,
                MemoryBudget.root("producer " + model, "viper.producer.staging.budget.bytes", budgetBytes),
                keepVersions,
                waitMillis,
                onRetire,
                allocator);
    }

    /**
     * As above, the buffers counted against {@code budget} (the producer's child of the instance's), which
     * {@link #close()} closes.
     */
    StagingCache(
            String model,
            MemoryBudget budget,
            int keepVersions,
            long waitMillis,
            Consumer<StagingBuffer> onRetire,
            StagingAllocator allocator) {
        this.allocator = allocator;
        this.model = model;
        this.budget = budget;
        this.keepVersions = keepVersions;
        this.waitMillis = waitMillis;
        this.onRetire = onRetire;
    }

    /**
     * A buffer taken for a version, and what it held before when that passed the caller's test (null otherwise): the
     * bytes of the buffer are then still those {@code held} describes.
     */
    record Acquired(StagingBuffer buffer, StagedContent held) {}

    /**
     * A buffer of at least {@code size} bytes for {@code version}, reusing a free one (the newest whose
     * {@linkplain StagingBuffer#held content} passes {@code comparable} when there is one, so that the copy can skip
     * what did not change), else allocating within the budget, else waiting for leases on retired versions to close.
     * The buffer forgets what it held.
     */
    Acquired acquire(long version, long size, Predicate<StagedContent> comparable) {
        List<StagingBuffer> retired = new ArrayList<>();
        StagingBuffer result;
        StagedContent held;
        lock.lock();
        try {
            if (closed) {
                throw new ViperClosedException("producer of " + model + " is closed");
            }
            if (size > budget.ceiling()) {
                MemoryBudget tightest = budget.tightest();
                throw new ViperConfigException("model " + model + " needs " + size + " bytes of staging but "
                        + tightest.limitKey() + " is " + tightest.limit());
            }
            retireOlderThanKept(retired);
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMillis);
            while (true) {
                result = takeFree(size, comparable);
                if (result != null) {
                    break;
                }
                // Free buffers too small to reuse go back to the allocator when that makes room.
                long freeSmall = buffers.stream()
                        .filter(b -> b.state() == StagingBuffer.State.FREE)
                        .mapToLong(b -> b.capacity)
                        .sum();
                if (budget.headroom() + freeSmall >= size) {
                    buffers.removeIf(b -> {
                        if (b.state() == StagingBuffer.State.FREE && budget.headroom() < size) {
                            b.free();
                            return true;
                        }
                        return false;
                    });
                }
                result = allocate(size);
                if (result != null) {
                    buffers.add(result);
                    break;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0 && budget.limit() - budget.held() >= size) {
                    // This producer's own budget has room: other models of the instance hold the rest.
                    throw budget.refusal(size, "staging for v" + version + ", after waiting " + waitMillis + " ms");
                }
                if (left <= 0) {
                    throw new ViperTimeoutException("staging for " + model + " v" + version
                            + " is full: every buffer is leased by consumers (budget " + budget.limit()
                            + " bytes); waited " + waitMillis + " ms");
                }
                try {
                    // Buffers of other models coming back do not signal this cache: look again now and then.
                    released.awaitNanos(Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ViperException(
                            ViperException.Reason.INTERNAL,
                            "interrupted while waiting for a staging buffer for " + model);
                }
                if (closed) {
                    throw new ViperClosedException("producer of " + model + " is closed");
                }
            }
            held = result.held() != null && comparable.test(result.held()) ? result.held() : null;
            result.prepare(version, size);
        } finally {
            lock.unlock();
        }
        retired.forEach(onRetire);
        return new Acquired(result, held);
    }

    /**
     * A new buffer of {@code size} bytes reserved in the budget, or null when the budget has no room; under the lock.
     */
    private StagingBuffer allocate(long size) {
        StagingBuffer[] made = new StagingBuffer[1];
        MemoryBudget.Reservation r = budget.tryReserve(
                size, () -> made[0] == null ? "staging buffer of " + size + " bytes" : made[0].toString());
        if (r == null) {
            return null;
        }
        try {
            made[0] = new StagingBuffer(this, size, allocator, r);
            return made[0];
        } catch (RuntimeException | Error e) {
            r.close();
            throw e;
        }
    }

    /**
     * Marks {@code b} as serving (leases may be taken), holding {@code content}, and retires versions beyond the newest
     * kept: they take no new leases from now on. Returns those without open leases for {@link #withdraw}, which the
     * caller runs once the new version is announced, so that withdrawing old versions does not delay it; the others are
     * withdrawn when their last lease closes ({@link #onLeaseClosed}).
     */
    List<StagingBuffer> activate(StagingBuffer b, StagedContent content) {
        List<StagingBuffer> retired = new ArrayList<>();
        lock.lock();
        try {
            b.activate(content);
            if (content != null && (newest == null || content.version() > newest.version())) {
                newest = content;
            }
            retireOlderThanKept(retired);
        } finally {
            lock.unlock();
        }
        return retired;
    }

    /** Hands buffers {@link #activate} retired to the retire callback (transports withdraw them). */
    void withdraw(List<StagingBuffer> retired) {
        retired.forEach(onRetire);
    }

    /**
     * Gives a buffer whose publish failed back to the pool; it forgets what it held (its bytes may be half written).
     */
    void abandon(StagingBuffer b) {
        lock.lock();
        try {
            b.abandon();
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * What the newest version activated holds: its hashes describe that version's bytes whether or not its buffer still
     * holds them, so a later version that declares what changed since it can take them ({@link StagingCopy#changed});
     * null before the first.
     */
    StagedContent newest() {
        lock.lock();
        try {
            return newest;
        } finally {
            lock.unlock();
        }
    }

    /** Buffers currently staged (serving), newest first. */
    List<StagingBuffer> staged() {
        lock.lock();
        try {
            return buffers.stream()
                    .filter(b -> b.state() == StagingBuffer.State.STAGED)
                    .sorted(Comparator.comparingLong(StagingBuffer::version).reversed())
                    .toList();
        } finally {
            lock.unlock();
        }
    }

    private void retireOlderThanKept(List<StagingBuffer> retired) {
        List<StagingBuffer> staged = buffers.stream()
                .filter(b -> b.state() == StagingBuffer.State.STAGED)
                .sorted(Comparator.comparingLong(StagingBuffer::version).reversed())
                .toList();
        for (int i = keepVersions; i < staged.size(); i++) {
            StagingBuffer old = staged.get(i);
            if (old.retire()) {
                retired.add(old);
            }
            LOG.log(
                    System.Logger.Level.DEBUG,
                    "{0} v{1}: retiring staging buffer ({2} open leases)",
                    model,
                    Long.toString(old.version()),
                    Long.toString(old.leases()));
        }
    }

    /** The newest free buffer whose content passes {@code comparable}, else the smallest free one that fits. */
    private StagingBuffer takeFree(long size, Predicate<StagedContent> comparable) {
        StagingBuffer best = null;
        StagingBuffer same = null;
        for (StagingBuffer b : buffers) {
            if (!b.reclaimIfWithdrawn() || b.capacity < size) {
                continue;
            }
            if (best == null || b.capacity < best.capacity) {
                best = b;
            }
            if (b.held() != null && (same == null || b.version() > same.version()) && comparable.test(b.held())) {
                same = b;
            }
        }
        if (same != null) {
            best = same;
        }
        if (best != null) {
            best.take();
        }
        return best;
    }

    /** A read lease on {@code b} closed; the last one on a retired buffer has transports withdraw it. */
    void onLeaseClosed(StagingBuffer b) {
        boolean withdraw = false;
        lock.lock();
        try {
            withdraw = b.leaseClosed(closed);
            if (b.leases() == 0) {
                released.signalAll();
            }
        } finally {
            lock.unlock();
        }
        if (withdraw) {
            onRetire.accept(b);
        }
    }

    /** Transports withdrew the retired {@code b}. */
    void onRetireHandled(StagingBuffer b) {
        lock.lock();
        try {
            b.withdrawn();
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Counts a new read lease on {@code b}; with {@code onlyStaged}, only while it serves.
     *
     * @return whether the lease was granted
     */
    boolean lease(StagingBuffer b, boolean onlyStaged) {
        lock.lock();
        try {
            return b.lease(onlyStaged);
        } finally {
            lock.unlock();
        }
    }

    String model() {
        return model;
    }

    /** Whether the calling thread holds this cache's lock, which guards its buffers' states. */
    boolean lockHeld() {
        return lock.isHeldByCurrentThread();
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
            for (StagingBuffer b : buffers) {
                b.retireForClose();
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (buffers.stream().anyMatch(b -> b.leases() > 0) && System.nanoTime() < deadline) {
                try {
                    released.await(50, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            for (StagingBuffer b : buffers) {
                if (b.leases() > 0) {
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "{0} v{1}: closing staging buffer with {2} open leases",
                            model,
                            Long.toString(b.version()),
                            Long.toString(b.leases()));
                }
                b.freeForClose();
            }
            buffers.clear();
            budget.close();
            released.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Who is told of the bytes transports serve from this cache's versions; any thread may call it. */
    void onServed(LongConsumer listener) {
        this.servedBytes = listener;
    }

    /** Transports served {@code bytes} of a version of this cache (any thread). */
    void served(long bytes) {
        servedBytes.accept(bytes);
    }
}
