package io.viper.jmh;

import io.viper.hash.Crc32c;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A consumer's copy of a version from memory it can read in place (ucx from a producer's mapped memory, a delta's
 * blocks from the version it holds) together with the CRC32C check of every byte, the two ways a consumer can do it,
 * against a memcpy of the same bytes:
 *
 * <ul>
 *   <li>{@link #copyThenCheck}: one thread copies {@code chunk} bytes at a time and hands each 1 MiB piece to another
 *       thread, which hashes it (what consumers did before 0180afa): the hash reads the bytes from memory again;
 *   <li>{@link #copyAndCheckInOnePass}: {@code threads} threads take 1 MiB units from a shared counter and each hashes
 *       the unit it just copied, from its cache (what {@code Verifier.Overlapped.copy} does now).
 * </ul>
 *
 * Each operation moves and checks {@code size} bytes.
 *
 * <pre>java -jar viper-jmh/target/benchmarks.jar CopyCheckBenchmark -f 1 -wi 3 -i 5</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 1,
        jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xmx2g"})
public class CopyCheckBenchmark {
    /** The unit one thread copies and then hashes, and the piece a hash covers. */
    private static final long PIECE = 1L << 20;

    /** Bytes per operation; 1 GiB by default. */
    @Param("1073741824")
    public long size;

    /** Bytes one copy moves in {@link #copyThenCheck} (8 MiB: the ucx reader's copies before 0180afa). */
    @Param("8388608")
    public long chunk;

    /** Threads that copy and hash in {@link #copyAndCheckInOnePass}, the calling one included. */
    @Param("2")
    public int threads;

    private Arena arena;
    private MemorySegment src;
    private MemorySegment dst;
    private ExecutorService pool;

    @Setup(Level.Trial)
    public void setUp() {
        if (size <= 0 || size % PIECE != 0 || chunk <= 0 || chunk % PIECE != 0 || threads < 1) {
            throw new IllegalArgumentException(
                    "size and chunk must be positive multiples of 1 MiB and threads at least 1: size " + size
                            + ", chunk " + chunk + ", threads " + threads);
        }
        arena = Arena.ofShared();
        src = BenchBuffers.randomSource(arena, size);
        dst = BenchBuffers.touchedDestination(arena, size);
        pool = Executors.newFixedThreadPool(Math.max(1, threads));
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        pool.shutdownNow();
        arena.close();
    }

    /** One thread copies, another hashes each piece once it is in. Returns the pieces' CRCs, XORed. */
    @Benchmark
    public int copyThenCheck() throws Exception {
        LinkedBlockingQueue<Long> arrived = new LinkedBlockingQueue<>();
        long pieces = size / PIECE;
        Future<Integer> check = pool.submit(() -> {
            int x = 0;
            for (long n = 0; n < pieces; n++) {
                long off = arrived.take();
                x ^= Crc32c.compute(dst.asSlice(off, PIECE));
            }
            return x;
        });
        for (long off = 0; off < size; off += chunk) {
            long len = Math.min(chunk, size - off);
            MemorySegment.copy(src, off, dst, off, len);
            for (long p = off; p < off + len; p += PIECE) {
                arrived.add(p);
            }
        }
        return check.get();
    }

    /** Each thread copies a unit and hashes it at once. Returns the pieces' CRCs, XORed. */
    @Benchmark
    public int copyAndCheckInOnePass() throws Exception {
        AtomicLong next = new AtomicLong();
        Callable<Integer> work = () -> {
            int x = 0;
            for (long off = next.getAndAdd(PIECE); off < size; off = next.getAndAdd(PIECE)) {
                MemorySegment.copy(src, off, dst, off, PIECE);
                x ^= Crc32c.compute(dst.asSlice(off, PIECE));
            }
            return x;
        };
        Future<?>[] helpers = new Future<?>[threads - 1];
        for (int i = 0; i < helpers.length; i++) {
            helpers[i] = pool.submit(work);
        }
        int x = work.call();
        for (Future<?> f : helpers) {
            x ^= (Integer) f.get();
        }
        return x;
    }

    /** memcpy of the same bytes, one thread: the bound the transfer benchmark reports against. */
    @Benchmark
    public MemorySegment memcpy() {
        MemorySegment.copy(src, 0, dst, 0, size);
        return dst;
    }
}
