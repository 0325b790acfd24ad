package io.viper.internal;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.IntConsumer;

/**
 * Threads of the hash pool that help a thread copy: the training thread a large snapshot into staging
 * ({@code viper.producer.copy.threads}), a consumer's reading thread a version it copies and checks
 * ({@code consumer.Verifier.Overlapped#copy}). One core cannot use the memory's bandwidth: here two threads copied 1
 * GiB in 53 ms where one took 67 (medians of 15). Its threads take pieces of {@link #pieceBytes()} from a shared
 * counter beside the calling thread: {@link #STAGING_PIECE} for the producer, whose pool is idle during the copy (it
 * hashes what was copied once the copy ended); {@link TensorHashes#PIECE} for the consumer, whose pool may still be
 * hashing bytes left in place. A helper that starts late, behind other hashing, finds nothing left, and the copy never
 * waits for it to start.
 *
 * <p>Called by the thread that copies (one at a time per call). Every piece has ended, copied or failed, when
 * {@link #run} returns, so the source's memory is not read after the call.
 */
public final class CopyHelpers {
    /** No helpers: the training thread copies alone. */
    public static final CopyHelpers NONE = new CopyHelpers(null, 0);

    /** The producer's piece, {@code StagingCopy}'s chunk (why that size: its class comment). */
    public static final long STAGING_PIECE = 16L << 20;

    /**
     * Smallest copy that is shared: two pieces, so that waking a helper (tens of microseconds) is small against a
     * piece.
     */
    static final long MIN_BYTES = 2 * STAGING_PIECE;

    /** A thread other than any caller's, to ask whether a snapshot's memory may be read off the training thread. */
    private static final Thread ANOTHER_THREAD = Thread.ofVirtual().unstarted(() -> {});

    private final ExecutorService pool;
    private final int helpers;
    private final long minBytes;
    private final long pieceBytes;

    /**
     * Helpers for copies of {@link #MIN_BYTES} and more, in pieces of {@link #STAGING_PIECE}.
     *
     * @param pool the hash pool
     * @param helpers pool threads that may help each copy ({@code viper.producer.copy.threads} - 1, at most the pool's
     *     threads)
     */
    public CopyHelpers(ExecutorService pool, int helpers) {
        this(pool, helpers, MIN_BYTES, STAGING_PIECE);
    }

    /**
     * @param minBytes the smallest copy that is shared
     * @param pieceBytes the most bytes one piece moves: a multiple of {@link TensorHashes#PIECE}, so that a piece never
     *     splits a compared unit
     */
    public CopyHelpers(ExecutorService pool, int helpers, long minBytes, long pieceBytes) {
        if (helpers < 0 || pieceBytes <= 0 || pieceBytes % TensorHashes.PIECE != 0) {
            throw new IllegalArgumentException(
                    "copy helpers: " + helpers + " threads, pieces of " + pieceBytes + " bytes");
        }
        this.pool = pool;
        this.helpers = helpers;
        this.minBytes = minBytes;
        this.pieceBytes = pieceBytes;
    }

    /** The most bytes one piece of a copy moves. */
    public long pieceBytes() {
        return pieceBytes;
    }

    /**
     * Whether a copy of {@code bytes} from {@code sources} is shared: large enough, and the memory of every source
     * ({@code memory}: null for none, such as a heap array) readable from another thread.
     */
    public <T> boolean shares(long bytes, Iterable<T> sources, Function<T, MemorySegment> memory) {
        if (helpers == 0 || bytes < minBytes) {
            return false;
        }
        for (T t : sources) {
            MemorySegment s = memory.apply(t);
            // A confined arena's memory may be read by its owner only: the training thread copies it alone.
            if (s != null && !s.isAccessibleBy(ANOTHER_THREAD)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Runs {@code piece} for 0 to {@code pieces - 1}, each once, on the calling thread and the helpers, and returns
     * when every one has ended. After a failure the pieces not begun are skipped.
     *
     * @throws RuntimeException the first piece's failure (an {@link Error} is rethrown as such)
     */
    public void run(int pieces, IntConsumer piece) {
        run(pieces, piece, () -> {});
    }

    /**
     * As {@link #run(int, IntConsumer)}, and {@code afterOwnPiece} runs on the calling thread after each piece that
     * thread ran (to report what the pieces ended so far from one thread).
     */
    public void run(int pieces, IntConsumer piece, Runnable afterOwnPiece) {
        Thread caller = Thread.currentThread();
        AtomicInteger next = new AtomicInteger();
        CountDownLatch ended = new CountDownLatch(pieces);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Runnable work = () -> {
            for (int i = next.getAndIncrement(); i < pieces; i = next.getAndIncrement()) {
                try {
                    if (failure.get() == null) {
                        piece.accept(i);
                        if (Thread.currentThread() == caller) {
                            afterOwnPiece.run();
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                } finally {
                    ended.countDown();
                }
            }
        };
        for (int h = 0; h < Math.min(helpers, pieces - 1); h++) {
            try {
                pool.execute(work);
            } catch (RejectedExecutionException e) {
                break; // the runtime is closing: the training thread copies the rest
            }
        }
        work.run();
        // The helpers finish the piece they copy within milliseconds; an interrupt is kept for the caller.
        if (TensorHashes.awaitUninterruptibly(ended)) {
            Thread.currentThread().interrupt();
        }
        Throwable e = failure.get();
        if (e instanceof RuntimeException r) {
            throw r;
        }
        if (e instanceof Error err) {
            throw err;
        }
        if (e != null) {
            throw new IllegalStateException(e);
        }
    }
}
