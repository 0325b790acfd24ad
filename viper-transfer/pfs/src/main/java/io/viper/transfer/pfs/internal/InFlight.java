package io.viper.transfer.pfs.internal;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs the pieces of one parallel read or write on {@link DirectIo#pool()}, at most {@code limit} at once: the caller
 * submits them in order (blocking while the limit is reached) and awaits them; the first failure of any piece is thrown
 * to the caller, as it was thrown (an {@link IOException}, a {@link RuntimeException} or an {@link Error}), and stops
 * further submissions. {@link #close} waits for the pieces still running, so that nothing touches a file or a buffer
 * after the operation returned or failed. One caller thread; the pieces run on the pool's.
 */
final class InFlight implements AutoCloseable {
    /** A piece of work. */
    @FunctionalInterface
    interface Piece {
        void run() throws IOException;
    }

    /** An unstarted thread: memory it may access, the I/O threads may too (not so memory of a confined arena). */
    private static final Thread ANOTHER = new Thread(() -> {});

    private final int limit;
    private final boolean inline;
    private final Semaphore permits;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    InFlight(int limit) {
        this(limit, true);
    }

    /**
     * @param parallel false to run each piece on the caller's thread as it is submitted (for memory only the caller may
     *     touch: see {@link #parallelFor})
     */
    InFlight(int limit, boolean parallel) {
        this.limit = limit;
        this.inline = !parallel;
        this.permits = new Semaphore(limit);
    }

    /** Whether pieces touching {@code segments} may run on the I/O threads: not when one is confined to its owner. */
    static boolean parallelFor(MemorySegment... segments) {
        for (MemorySegment s : segments) {
            if (!s.isAccessibleBy(ANOTHER)) {
                return false;
            }
        }
        return true;
    }

    /** Starts {@code piece} once fewer than the limit run; throws the first failure of an earlier piece instead. */
    void submit(Piece piece) throws IOException {
        if (inline) {
            piece.run();
            return;
        }
        rethrow();
        try {
            permits.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while pieces of a PFS read or write were in flight");
        }
        if (failure.get() != null) {
            permits.release();
            rethrow();
        }
        try {
            DirectIo.pool().execute(() -> {
                try {
                    piece.run();
                } catch (Throwable e) { // rethrown on the caller's thread, whatever it is
                    failure.compareAndSet(null, e);
                } finally {
                    permits.release();
                }
            });
        } catch (RejectedExecutionException e) {
            permits.release();
            throw e;
        }
    }

    /** Waits for every piece submitted and throws the first failure. */
    void await() throws IOException {
        drain();
        rethrow();
    }

    /** Waits for the pieces still running; their failures were or will not be thrown. */
    @Override
    public void close() {
        drain();
    }

    private void drain() {
        permits.acquireUninterruptibly(limit);
        permits.release(limit);
    }

    private void rethrow() throws IOException {
        Throwable e = failure.get();
        switch (e) {
            case null -> {}
            case IOException io -> throw io;
            case RuntimeException r -> throw r;
            case Error err -> throw err;
            default -> throw new IOException(e);
        }
    }
}
