package io.viper.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;

/** Off-heap buffers the benchmarks move and hash, set up before timing. */
final class BenchBuffers {
    private BenchBuffers() {}

    /** {@code size} bytes of seeded random data in {@code arena}, page-aligned, every page written. */
    static MemorySegment randomSource(Arena arena, long size) {
        MemorySegment src = arena.allocate(size, 4096);
        Random rnd = new Random(42);
        for (long i = 0; i + 8 <= size; i += 8) {
            src.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
        }
        return src;
    }

    /** {@code size} bytes in {@code arena}, page-aligned, every page touched so that timing sees no page faults. */
    static MemorySegment touchedDestination(Arena arena, long size) {
        MemorySegment dst = arena.allocate(size, 4096);
        dst.fill((byte) 1);
        return dst;
    }
}
