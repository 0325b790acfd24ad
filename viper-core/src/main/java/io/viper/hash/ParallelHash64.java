package io.viper.hash;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Viper's GPU-friendly 64-bit check hash ("phash64"), carried per tensor in manifests next to the tensor's hash (CRC32C
 * or XXH3-128) so that a consumer can verify a model in GPU memory without copying it back to the host. XXH3 is
 * sequential per tensor; this hash is a sum of independent terms, so a GPU computes it with one thread per 8-byte word
 * and an atomic add.
 *
 * <p>Definition, over {@code n} bytes: split them into little-endian 64-bit words {@code w[0..ceil(n/8))}, the last one
 * zero-padded. Then
 *
 * <pre>
 *   term(i, w) = fmix64(w XOR (K1 * (i + 1)))         (mod 2^64)
 *   acc        = sum over i of term(i, w[i])          (mod 2^64)
 *   phash64    = fmix64(acc XOR fmix64(n XOR K2))
 * </pre>
 *
 * with {@code fmix64} the MurmurHash3 64-bit finaliser, {@code K1 = 0x9E3779B97F4A7C15} and {@code K2 =
 * 0xC2B2AE3D27D4EB4F}. The word index enters every term, so moved or swapped words change the sum; the length enters
 * the final mix. It detects transfer corruption (torn, shifted, zeroed or flipped data); like XXH3 it is not a
 * cryptographic hash.
 *
 * <p>Stateless and thread-safe.
 */
public final class ParallelHash64 {
    /** Multiplier of the word index. */
    public static final long K1 = 0x9E3779B97F4A7C15L;
    /** Mixed into the length. */
    public static final long K2 = 0xC2B2AE3D27D4EB4FL;
    /** First multiplier of {@link #fmix64}. */
    public static final long M1 = 0xff51afd7ed558ccdL;
    /** Second multiplier of {@link #fmix64}. */
    public static final long M2 = 0xc4ceb9fe1a85ec53L;

    private static final ValueLayout.OfLong LE_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private ParallelHash64() {}

    /** The MurmurHash3 64-bit finaliser. */
    public static long fmix64(long k) {
        k ^= k >>> 33;
        k *= M1;
        k ^= k >>> 33;
        k *= M2;
        k ^= k >>> 33;
        return k;
    }

    /** The term of word {@code word} at word index {@code index}. */
    public static long term(long index, long word) {
        return fmix64(word ^ (K1 * (index + 1)));
    }

    /** The hash from the sum of all terms and the byte length. */
    public static long finish(long acc, long length) {
        return fmix64(acc ^ fmix64(length ^ K2));
    }

    /** The term sum of the partial last word: {@code tail} holds the last {@code length % 8} bytes. */
    public static long tailTerm(long length, MemorySegment tail) {
        int rest = (int) (length & 7);
        if (rest == 0) {
            return 0;
        }
        if (tail.byteSize() != rest) {
            throw new IllegalArgumentException("tail of " + tail.byteSize() + " bytes, expected " + rest);
        }
        long w = 0;
        for (int b = 0; b < rest; b++) {
            w |= (tail.get(ValueLayout.JAVA_BYTE, b) & 0xffL) << (8 * b);
        }
        return term(length >>> 3, w);
    }

    /** The hash of every byte of {@code data}, computed on this thread. */
    public static long hash(MemorySegment data) {
        long n = data.byteSize();
        long words = n >>> 3;
        long acc = 0;
        for (long i = 0; i < words; i++) {
            acc += term(i, data.get(LE_LONG, i << 3));
        }
        acc += tailTerm(n, data.asSlice(words << 3));
        return finish(acc, n);
    }

    /** The 16 lowercase hex digits of {@code h}, as manifests carry it. */
    public static String toHex(long h) {
        String s = Long.toHexString(h);
        return "0".repeat(16 - s.length()) + s;
    }

    /**
     * Parses 16 hex digits.
     *
     * @throws IllegalArgumentException when {@code hex} is not 16 hex digits
     */
    public static long parseHex(String hex) {
        if (hex == null || hex.length() != 16) {
            throw new IllegalArgumentException("phash64 '" + hex + "' is not 16 hex digits");
        }
        try {
            return Long.parseUnsignedLong(hex, 16);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("phash64 '" + hex + "' is not 16 hex digits");
        }
    }
}
