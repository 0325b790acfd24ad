package io.viper.internal;

import io.viper.errors.ViperException;
import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * The hashes of a model's tensors, computed piece by piece as the model's bytes arrive: on the producer once the
 * training thread copied them into staging ({@code producer.StagingCopy} reports them when its copy ended, so that the
 * stall has the memory to itself), on a consumer while the transport receives them. Whoever moves the bytes calls
 * {@link #arrived} for each range that is final; every piece whose bytes are all in is queued for at most
 * {@code workers} tasks on the hash pool, so hashing overlaps the transfer, or the training that follows the stall,
 * instead of following it (one core is left to the thread that moves the bytes). {@link #await()} then hashes what is
 * left on the calling thread (small pieces never leave it: no hand-off to the pool for a few kilobytes) and combines
 * the pieces of each tensor.
 *
 * <p>Pieces: with a {@linkplain HashAlgorithm#combinable() combinable} algorithm (CRC32C) each tensor is cut into
 * pieces of {@link #PIECE} bytes, so one large tensor is hashed by several threads; XXH3-128 is sequential within a
 * tensor, so there a piece is a whole tensor.
 *
 * <p>Unchanged bytes: built with the piece hashes of an earlier version of the same layout, a piece all of whose bytes
 * were reported {@link #known} (equal to that version's) takes the earlier hash and is not hashed; a piece with any
 * byte reported {@link #arrived} is hashed.
 *
 * <p>Threads: {@link #arrived} and {@link #known} may be called from any thread (a transport's completion thread
 * included), {@link #await()} and {@link #close()} by the owner, once. The memory must stay allocated and unchanged
 * until {@link #close()} returned, which waits for the pool's tasks.
 */
public final class TensorHashes implements AutoCloseable {
    /**
     * Piece size of combinable algorithms: large enough that hashing one costs far more than handing it over, small
     * enough that a consumer hashes it from the processor's cache right after it arrived (4 MiB pieces, hashed from
     * memory, measured slower here), and that several threads share a large tensor.
     */
    public static final long PIECE = 1L << 20;
    /** Pieces smaller than this are left to the thread that awaits the result. */
    static final long POOL_MIN = 256L << 10;

    private static final int MISSING = 0;
    private static final int READY = 1;
    private static final int CLAIMED = 2;
    private static final int DONE = 3;

    private final HashAlgorithm[] algorithm;
    private final MemorySegment data;
    private final ExecutorService pool;
    private final int maxWorkers;
    private final AtomicInteger workers = new AtomicInteger();
    /** Pieces whose bytes are in, for the pool's workers. */
    private final ConcurrentLinkedQueue<Integer> ready = new ConcurrentLinkedQueue<>();

    private final int tensors;
    /** Per piece, in data order: its tensor, offset in the data, length, bytes still to arrive. */
    private final int[] tensorOf;

    private final long[] offset;
    private final long[] length;
    private final long[] missing;
    /** Per piece, whether any of its bytes arrived changed (not {@link #known}); guarded by {@code missing}. */
    private final boolean[] changed;
    /** The pieces' hashes in the earlier version whose unchanged bytes are reported {@link #known}; null: none. */
    private final ContentHash[] before;

    private final ContentHash[] result;
    /** Told each piece's hash as it is known; {@link PieceListener#NONE} when nobody listens. */
    private final PieceListener listener;

    private final AtomicIntegerArray state;
    private final CountDownLatch done;
    private volatile Throwable failure;
    private volatile boolean cancelled;

    /**
     * @param infos the tensors, contiguous and in data order (as manifests and staging lay them out)
     * @param algorithms the algorithm of each tensor's hash
     * @param data the data section the offsets refer to
     * @param workers most pool tasks hashing at once
     */
    public TensorHashes(
            List<TensorInfo> infos,
            List<HashAlgorithm> algorithms,
            MemorySegment data,
            ExecutorService pool,
            int workers) {
        this(infos, algorithms, data, pool, workers, null);
    }

    /**
     * @param before the {@link #pieces()} of an earlier version laid out as {@code infos} with the same algorithms, for
     *     the pieces reported {@link #known}; null: none
     */
    public TensorHashes(
            List<TensorInfo> infos,
            List<HashAlgorithm> algorithms,
            MemorySegment data,
            ExecutorService pool,
            int workers,
            ContentHash[] before) {
        this(infos, algorithms, data, pool, workers, before, PieceListener.NONE);
    }

    /**
     * Told the hash of each piece as soon as it is known (hashed, or taken from {@code before}), on the thread that
     * knew it, before {@link #await()} can return.
     */
    @FunctionalInterface
    public interface PieceListener {
        PieceListener NONE = (offset, length, hash) -> {};

        /** The piece of bytes {@code [offset, offset + length)} of the data hashes to {@code hash}. Quick. */
        void known(long offset, long length, ContentHash hash);
    }

    /** As above; {@code listener} is told each piece's hash as it is known. */
    public TensorHashes(
            List<TensorInfo> infos,
            List<HashAlgorithm> algorithms,
            MemorySegment data,
            ExecutorService pool,
            int workers,
            ContentHash[] before,
            PieceListener listener) {
        this.listener = listener;
        this.algorithm = algorithms.toArray(HashAlgorithm[]::new);
        this.data = data;
        this.pool = pool;
        this.maxWorkers = Math.max(1, workers);
        this.tensors = infos.size();
        int n = 0;
        for (int t = 0; t < infos.size(); t++) {
            n += pieces(algorithm[t], infos.get(t).length());
        }
        tensorOf = new int[n];
        offset = new long[n];
        length = new long[n];
        missing = new long[n];
        int p = 0;
        for (int t = 0; t < infos.size(); t++) {
            TensorInfo info = infos.get(t);
            int k = pieces(algorithm[t], info.length());
            long piece = algorithm[t].combinable() ? PIECE : Math.max(1, info.length());
            for (int j = 0; j < k; j++) {
                tensorOf[p] = t;
                offset[p] = info.offset() + j * piece;
                length[p] = Math.min(piece, info.length() - j * piece);
                missing[p] = length[p];
                p++;
            }
        }
        if (before != null && before.length != n) {
            throw new IllegalArgumentException("the earlier version has " + before.length + " pieces, this one " + n);
        }
        this.before = before;
        changed = new boolean[n];
        result = new ContentHash[n];
        state = new AtomicIntegerArray(n);
        done = new CountDownLatch(n);
    }

    private static int pieces(HashAlgorithm algorithm, long len) {
        return algorithm.combinable() && len > PIECE ? Math.toIntExact((len + PIECE - 1) / PIECE) : 1;
    }

    /** Bytes {@code [from, from + len)} of the data are final: starts hashing the pieces they complete. */
    public void arrived(long from, long len) {
        report(from, len, true, false);
    }

    /**
     * As {@link #arrived}, but the pieces these bytes complete are hashed here, on the calling thread, before it
     * returns: for a thread that just copied them, so that they are read from its cache.
     */
    public void arrivedAndHashHere(long from, long len) {
        report(from, len, true, true);
    }

    /**
     * Bytes {@code [from, from + len)} of the data are final and equal to the earlier version's: a piece they complete
     * whose bytes were all reported so takes its earlier hash. Without an earlier version, the same as
     * {@link #arrived}.
     */
    public void known(long from, long len) {
        report(from, len, before == null, false);
    }

    private void report(long from, long len, boolean changedBytes, boolean hashHere) {
        long to = from + len;
        int first = firstEndingAfter(from);
        // The pieces this call claims, to hash on this thread: at most those the range overlaps.
        int[] here = hashHere && len > 0 ? new int[firstEndingAfter(to - 1) - first + 1] : null;
        int claimed = 0;
        synchronized (missing) {
            for (int p = first; p < offset.length && offset[p] < to; p++) {
                long overlap = Math.min(to, offset[p] + length[p]) - Math.max(from, offset[p]);
                missing[p] -= overlap;
                changed[p] |= changedBytes;
                if (missing[p] > 0) {
                    continue;
                }
                if (!changed[p]) {
                    if (state.compareAndSet(p, MISSING, DONE)) {
                        result[p] = before[p];
                        listener.known(offset[p], length[p], result[p]);
                        done.countDown();
                    }
                } else if (hashHere) {
                    if (state.compareAndSet(p, MISSING, CLAIMED)) {
                        here[claimed++] = p;
                    }
                } else if (state.compareAndSet(p, MISSING, READY) && length[p] >= POOL_MIN) {
                    ready.add(p);
                }
            }
        }
        for (int i = 0; i < claimed; i++) {
            hash(here[i]);
        }
        startWorkers();
    }

    /** Where the piece holding byte {@code pos} of the data ends; {@link Long#MAX_VALUE} past the last piece. */
    public long pieceEnd(long pos) {
        int p = firstEndingAfter(pos);
        return p < offset.length ? offset[p] + length[p] : Long.MAX_VALUE;
    }

    /** The first piece that ends after {@code pos} (pieces are contiguous and sorted). */
    private int firstEndingAfter(long pos) {
        int lo = 0;
        int hi = offset.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (offset[mid] + length[mid] <= pos) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    private void startWorkers() {
        while (!ready.isEmpty()) {
            int w = workers.get();
            if (w >= maxWorkers) {
                return;
            }
            if (workers.compareAndSet(w, w + 1)) {
                try {
                    pool.execute(this::work);
                } catch (RejectedExecutionException e) {
                    workers.decrementAndGet(); // the pool is shutting down: await() hashes the pieces itself
                    return;
                }
            }
        }
    }

    /** A pool task: hashes queued pieces until none is left. */
    private void work() {
        while (true) {
            Integer p;
            while ((p = ready.poll()) != null) {
                if (state.compareAndSet(p, READY, CLAIMED)) {
                    hash(p);
                }
            }
            workers.decrementAndGet();
            // A piece queued after the poll above and before the decrement would wait for await():
            // take it if no other worker will.
            if (ready.isEmpty() || !tryRejoin()) {
                return;
            }
        }
    }

    private boolean tryRejoin() {
        int w = workers.get();
        return w < maxWorkers && workers.compareAndSet(w, w + 1);
    }

    private void hash(int p) {
        try {
            if (!cancelled) {
                result[p] = algorithm[tensorOf[p]].hash(data.asSlice(offset[p], length[p]));
                listener.known(offset[p], length[p], result[p]);
            }
        } catch (RuntimeException | Error e) {
            failure = e;
        } finally {
            state.set(p, DONE);
            done.countDown();
        }
    }

    /**
     * Every byte is final: hashes the pieces not yet started on this thread, waits for the others, and returns each
     * tensor's hash, in the order of the tensors given.
     */
    public ContentHash[] await() {
        // Large pieces not reported (a GPU-staged version, a mapped file) go to the pool too.
        for (int p = 0; p < offset.length; p++) {
            if (length[p] >= POOL_MIN && state.compareAndSet(p, MISSING, READY)) {
                ready.add(p);
            }
        }
        startWorkers();
        for (int p = 0; p < offset.length; p++) {
            if (state.compareAndSet(p, MISSING, CLAIMED) || state.compareAndSet(p, READY, CLAIMED)) {
                hash(p);
            }
        }
        awaitAll();
        if (failure != null) {
            throw new ViperException(ViperException.Reason.INTERNAL, "hashing failed: " + failure, failure);
        }
        ContentHash[] out = new ContentHash[tensors];
        for (int p = 0; p < offset.length; p++) {
            int t = tensorOf[p];
            out[t] = out[t] == null ? result[p] : algorithm[t].combine(out[t], result[p], length[p]);
        }
        return out;
    }

    /** After {@link #await()}: the hash of every piece, in data order (for a later version's {@code before}). */
    public ContentHash[] pieces() {
        return result.clone();
    }

    private void awaitAll() {
        if (awaitUninterruptibly(done)) {
            Thread.currentThread().interrupt();
            throw new ViperException(ViperException.Reason.INTERNAL, "interrupted while hashing");
        }
    }

    /**
     * Waits until {@code latch} is open, even when interrupted: here every piece is done, since the pool's tasks read
     * memory the caller is about to reuse ({@link CopyHelpers} likewise). Returns whether the thread was interrupted
     * meanwhile; the caller decides what that means.
     */
    static boolean awaitUninterruptibly(CountDownLatch latch) {
        boolean interrupted = false;
        while (true) {
            try {
                latch.await();
                return interrupted;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
    }

    /** Abandons what has not started and waits for the tasks that have, so the memory may be reused. */
    @Override
    public void close() {
        cancelled = true;
        for (int p = 0; p < offset.length; p++) {
            if (state.compareAndSet(p, MISSING, DONE) || state.compareAndSet(p, READY, DONE)) {
                done.countDown();
            }
        }
        if (awaitUninterruptibly(done)) {
            Thread.currentThread().interrupt();
        }
    }
}
