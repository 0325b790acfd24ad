package io.viper.hash;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** CRC32C over segments, its combination of pieces, and its place among the hash algorithms. */
class Crc32cTest {
    private static int jdk(byte[] b, int from, int to) {
        CRC32C c = new CRC32C();
        c.update(b, from, to - from);
        return (int) c.getValue();
    }

    @Test
    void knownValues() {
        // The check value of CRC-32C (RFC 3720's polynomial): "123456789".
        assertEquals(
                0xe3069283, Crc32c.compute(MemorySegment.ofArray("123456789".getBytes(StandardCharsets.US_ASCII))));
        assertEquals(0, Crc32c.compute(MemorySegment.ofArray(new byte[0])));
        assertEquals("e3069283", ContentHash.crc32c(0xe3069283).toHex());
        assertEquals(ContentHash.crc32c(0xe3069283), ContentHash.parseHex(HashAlgorithm.CRC32C, "E3069283"));
        assertEquals("00000007", ContentHash.crc32c(7).toHex());
    }

    @Test
    void nativeHeapAndNonByteArraysAgree() {
        byte[] bytes = new byte[300_001];
        new SplittableRandom(3).nextBytes(bytes);
        int expected = jdk(bytes, 0, bytes.length);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment off = arena.allocate(bytes.length);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, off, 0, bytes.length);
            assertEquals(expected, Crc32c.compute(off));
        }
        assertEquals(expected, Crc32c.compute(MemorySegment.ofArray(bytes)));
        // A float[] cannot be viewed as a ByteBuffer: the bytes go through a buffer.
        float[] floats = new float[25_000];
        for (int i = 0; i < floats.length; i++) {
            floats[i] = i * 0.5f;
        }
        MemorySegment f = MemorySegment.ofArray(floats);
        assertEquals(Crc32c.compute(MemorySegment.ofArray(f.toArray(ValueLayout.JAVA_BYTE))), Crc32c.compute(f));
    }

    @Test
    void piecesCombineIntoTheWhole() {
        SplittableRandom rnd = new SplittableRandom(11);
        byte[] b = new byte[70_000];
        rnd.nextBytes(b);
        for (int i = 0; i < 200; i++) {
            int cut = rnd.nextInt(b.length + 1);
            int end = cut + rnd.nextInt(b.length - cut + 1);
            assertEquals(
                    jdk(b, 0, end),
                    Crc32c.combine(jdk(b, 0, cut), jdk(b, cut, end), end - cut),
                    "cut at " + cut + " of " + end);
        }
        // Three pieces, and an empty second piece.
        int a = jdk(b, 0, 1000);
        int ab = Crc32c.combine(a, jdk(b, 1000, 5000), 4000);
        assertEquals(jdk(b, 0, 9000), Crc32c.combine(ab, jdk(b, 5000, 9000), 4000));
        assertEquals(a, Crc32c.combine(a, 0, 0));
        // A long run of zero bytes (the operator for a length beyond 2^32 bits).
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment zeros = arena.allocate(5L << 20);
            int z = Crc32c.compute(zeros);
            assertEquals(
                    Crc32c.compute(zeros),
                    Crc32c.combine(
                            Crc32c.compute(zeros.asSlice(0, 3L << 20)),
                            Crc32c.compute(zeros.asSlice(3L << 20)),
                            2L << 20));
            assertNotEquals(0, z);
        }
    }

    @Test
    void algorithmsByName() {
        assertEquals(HashAlgorithm.CRC32C, HashAlgorithm.named("crc32c"));
        assertEquals(HashAlgorithm.XXH3_128, HashAlgorithm.named(" XXH3_128 "));
        assertEquals(
                "unknown hash algorithm 'md5' (use crc32c or xxh3_128)",
                assertThrows(ViperConfigException.class, () -> HashAlgorithm.named("md5"))
                        .getMessage());
        MemorySegment data = MemorySegment.ofArray("123456789".getBytes(StandardCharsets.US_ASCII));
        assertEquals(ContentHash.crc32c(0xe3069283), HashAlgorithm.CRC32C.hash(data));
        assertEquals(Xxh3.hash128(data), HashAlgorithm.XXH3_128.hash(data));
        assertThrows(
                UnsupportedOperationException.class,
                () -> HashAlgorithm.XXH3_128.combine(Xxh3.hash128(data), Xxh3.hash128(data), 9));
    }

    @Test
    void crcHashesAreCheckedForSize() {
        assertThrows(IllegalArgumentException.class, () -> new ContentHash(HashAlgorithm.CRC32C, 0, 1L << 32));
        assertThrows(ViperFormatException.class, () -> ContentHash.parseHex(HashAlgorithm.CRC32C, "e306928"));
        assertNotEquals(ContentHash.crc32c(1), new ContentHash(0, 1), "the algorithm is part of the hash");
    }
}
