package io.viper.jmh;

import io.viper.hash.ContentHash;
import io.viper.hash.Crc32c;
import io.viper.hash.Xxh3;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
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
 * The two tensor hashes, XXH3-128 and CRC32C (the JDK's hardware CRC), against a plain copy
 * ({@link MemorySegment#copy}, a memcpy) of the same off-heap buffer, single-threaded. Each operation processes
 * {@code size} bytes, so GB/s = size / (ms/op) / 1e6.
 *
 * <pre>java -jar viper-jmh/target/benchmarks.jar HashBenchmark -f 1 -wi 2 -i 3</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class HashBenchmark {
    /** Bytes per operation; 64 MiB by default. */
    @Param("67108864")
    public long size;

    /** Piece size for the streaming benchmark. */
    @Param("1048576")
    public long chunk;

    /**
     * Before timing, hash heap segments (byte[] and float[] backed) and stream through a Hasher, as an application
     * does, so that the JIT's profiles are not those of a single-purpose benchmark.
     */
    @Param("true")
    public boolean mixedUse;

    private Arena arena;
    private MemorySegment src;
    private MemorySegment dst;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        src = BenchBuffers.randomSource(arena, size);
        dst = BenchBuffers.touchedDestination(arena, size);
        if (mixedUse) {
            MemorySegment heapBytes = MemorySegment.ofArray(new byte[65536]);
            MemorySegment heapFloats = MemorySegment.ofArray(new float[16384]);
            MemorySegment offHeap = src.asSlice(0, 65536);
            long sink = 0;
            for (int i = 0; i < 3000; i++) {
                sink += Xxh3.hash128(heapBytes).low() + Xxh3.hash128(heapFloats).low();
                Xxh3.Hasher h = new Xxh3.Hasher();
                for (long off = 0; off < offHeap.byteSize(); off += 1000) {
                    h.update(offHeap.asSlice(off, Math.min(1000, offHeap.byteSize() - off)));
                }
                sink += h.digest().low();
            }
            if (sink == 42) {
                System.out.println(sink);
            }
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        arena.close();
    }

    /** Xxh3.hash128 over the whole buffer. */
    @Benchmark
    public ContentHash xxh3Hash128() {
        return Xxh3.hash128(src);
    }

    /** The same bytes through an Xxh3.Hasher, {@code chunk} bytes per update. */
    @Benchmark
    public ContentHash xxh3Streaming() {
        Xxh3.Hasher h = new Xxh3.Hasher();
        for (long off = 0; off < size; off += chunk) {
            h.update(src.asSlice(off, Math.min(chunk, size - off)));
        }
        return h.digest();
    }

    /** CRC32C of the whole buffer ({@link Crc32c}, what manifests of format 2 carry). */
    @Benchmark
    public int crc32c() {
        return Crc32c.compute(src);
    }

    /** memcpy of the same bytes to another off-heap buffer: the floor for moving them at all. */
    @Benchmark
    public MemorySegment memcpy() {
        MemorySegment.copy(src, 0, dst, 0, size);
        return dst;
    }
}
