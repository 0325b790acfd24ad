package io.viper.hash;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;
import java.util.function.IntUnaryOperator;
import org.junit.jupiter.api.Test;

/** ParallelHash64 against vectors of an independent Python implementation of its definition, and its properties. */
class ParallelHash64Test {
    private static MemorySegment bytes(Arena arena, int n, IntUnaryOperator f) {
        MemorySegment s = arena.allocate(Math.max(1, n)).asSlice(0, n);
        for (int i = 0; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) f.applyAsInt(i));
        }
        return s;
    }

    @Test
    void matchesReferenceVectors() {
        try (Arena arena = Arena.ofConfined()) {
            assertEquals(
                    "f290399b2f63a5a1", ParallelHash64.toHex(ParallelHash64.hash(MemorySegment.ofArray(new byte[0]))));
            assertEquals(
                    "e985955b4e56a39e",
                    ParallelHash64.toHex(ParallelHash64.hash(MemorySegment.ofArray(new byte[] {'a', 'b', 'c'}))));
            assertEquals("2d9c53629b8b77ff", ParallelHash64.toHex(ParallelHash64.hash(bytes(arena, 100, i -> i))));
            assertEquals(
                    "bbc7c389b771d984", ParallelHash64.toHex(ParallelHash64.hash(bytes(arena, 4101, i -> i % 251))));
        }
    }

    @Test
    void termSumIsOrderFreeAndMatchesTheOneShotHash() {
        try (Arena arena = Arena.ofConfined()) {
            Random r = new Random(7);
            MemorySegment data = bytes(arena, 8 * 1000 + 3, i -> r.nextInt());
            long acc = 0;
            // Any order of terms gives the same sum: what lets a GPU add them atomically.
            for (long i = 999; i >= 0; i--) {
                acc += ParallelHash64.term(
                        i, data.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), i * 8));
            }
            acc += ParallelHash64.tailTerm(data.byteSize(), data.asSlice(8000));
            assertEquals(ParallelHash64.hash(data), ParallelHash64.finish(acc, data.byteSize()));
        }
    }

    @Test
    void detectsSwappedWordsFlippedBitsAndTrailingZeros() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = bytes(arena, 64, i -> i);
            long h = ParallelHash64.hash(a);
            MemorySegment swapped = bytes(arena, 64, i -> i < 8 ? i + 8 : i < 16 ? i - 8 : i);
            assertNotEquals(h, ParallelHash64.hash(swapped));
            MemorySegment flipped = bytes(arena, 64, i -> i == 63 ? i ^ 1 : i);
            assertNotEquals(h, ParallelHash64.hash(flipped));
            MemorySegment longer = bytes(arena, 65, i -> i < 64 ? i : 0);
            assertNotEquals(h, ParallelHash64.hash(longer));
        }
    }

    @Test
    void hexRoundTripsAndRejectsGarbage() {
        assertEquals(-2L, ParallelHash64.parseHex(ParallelHash64.toHex(-2L)));
        assertEquals("0000000000000001", ParallelHash64.toHex(1));
        assertThrows(IllegalArgumentException.class, () -> ParallelHash64.parseHex("xyz"));
        assertThrows(IllegalArgumentException.class, () -> ParallelHash64.parseHex("000000000000000g"));
    }
}
