package io.viper.internal.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RangeCompareTest {
    private static final long LOOP = RangeCompare.LOOP_MIN;
    private static final long STEP = RangeCompare.STEP;

    @Test
    void equalRangesAreEqualAtEveryLengthAndOffset() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = random(arena, 3 * LOOP + 64, 1);
            MemorySegment b = arena.allocate(a.byteSize() + 16);
            for (long len : new long[] {0, 1, 7, 8, 9, LOOP - 1, LOOP, LOOP + 3, 2 * LOOP + 13}) {
                for (long aOff : new long[] {0, 3, 8}) {
                    long bOff = 5;
                    MemorySegment.copy(a, aOff, b, bOff, len);
                    assertTrue(RangeCompare.equal(a, aOff, b, bOff, len), "length " + len + " from " + aOff);
                }
            }
        }
    }

    @Test
    void oneDifferingByteIsFoundWhereverItIs() {
        try (Arena arena = Arena.ofConfined()) {
            long len = 2 * LOOP + 5; // the loop, then a tail shorter than a word
            MemorySegment a = random(arena, len + 3, 2);
            MemorySegment b = arena.allocate(len + 3);
            for (long at : new long[] {0, 7, 8, STEP - 1, STEP, STEP + 1, LOOP, len - 6, len - 5, len - 1}) {
                MemorySegment.copy(a, 3, b, 0, len);
                b.set(ValueLayout.JAVA_BYTE, at, (byte) ~b.get(ValueLayout.JAVA_BYTE, at));
                assertFalse(RangeCompare.equal(a, 3, b, 0, len), "a difference at byte " + at);
            }
        }
    }

    @Test
    void bytesOutsideTheRangesDoNotCount() {
        try (Arena arena = Arena.ofConfined()) {
            long len = LOOP + 11;
            MemorySegment a = random(arena, len + 32, 3);
            MemorySegment b = random(arena, len + 32, 4);
            MemorySegment.copy(a, 16, b, 16, len);
            assertTrue(RangeCompare.equal(a, 16, b, 16, len));
            assertFalse(RangeCompare.equal(a, 15, b, 15, len + 2));
        }
    }

    @Test
    void agreesWithMismatchOnHeapAndNativeSegments() {
        Random rnd = new Random(5);
        float[] weights = new float[(int) (3 * LOOP / 4)];
        for (int i = 0; i < weights.length; i++) {
            weights[i] = rnd.nextFloat();
        }
        MemorySegment heap = MemorySegment.ofArray(weights); // how a snapshot of float[] tensors is read
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment copy = arena.allocate(heap.byteSize());
            for (int round = 0; round < 300; round++) {
                MemorySegment.copy(heap, 0, copy, 0, heap.byteSize());
                long from = 4L * rnd.nextInt(weights.length / 2);
                long len = rnd.nextBoolean() ? rnd.nextLong(LOOP) : LOOP + rnd.nextLong(heap.byteSize() - from - LOOP);
                if (rnd.nextBoolean() && len > 0) {
                    long at = from + rnd.nextLong(len);
                    copy.set(ValueLayout.JAVA_BYTE, at, (byte) (copy.get(ValueLayout.JAVA_BYTE, at) + 1));
                }
                boolean expected = MemorySegment.mismatch(heap, from, from + len, copy, from, from + len) == -1;
                assertEquals(
                        expected,
                        RangeCompare.equal(heap, from, copy, from, len),
                        "round " + round + ": " + len + " bytes from " + from);
                assertEquals(
                        expected,
                        RangeCompare.equal(copy, from, heap, from, len),
                        "round " + round + ", the other way");
            }
        }
    }

    private static MemorySegment random(Arena arena, long size, long seed) {
        byte[] bytes = new byte[Math.toIntExact(size)];
        new Random(seed).nextBytes(bytes);
        return arena.allocate(size).copyFrom(MemorySegment.ofArray(bytes));
    }
}
