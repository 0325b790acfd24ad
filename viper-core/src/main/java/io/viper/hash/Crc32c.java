package io.viper.hash;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * CRC32C (Castagnoli, the CRC of iSCSI and ext4: reflected polynomial {@code 0x82F63B78}, initial value and final xor
 * {@code 0xFFFFFFFF}) over {@link MemorySegment}s of any size, on or off the heap. The bytes go through {@link CRC32C},
 * which the JVM computes with the processor's CRC instructions. {@link #combine} gives the CRC of two concatenated
 * pieces from theirs, so that the pieces of one tensor can be checked on several threads (zlib's {@code crc32_combine},
 * for this polynomial).
 *
 * <p>Stateless and thread-safe; a segment must not be written while it is read.
 */
public final class Crc32c {
    /** The reflected Castagnoli polynomial. */
    private static final int POLY = 0x82F63B78;
    /** Heap segments that are not byte arrays go through a buffer of this size. */
    private static final int HEAP_PIECE = 64 * 1024;
    /** {@code X2N[k]} is x^(2^k) modulo the polynomial, reflected. */
    private static final int[] X2N = new int[32];

    static {
        int p = 1 << 30; // x^1
        X2N[0] = p;
        for (int k = 1; k < 32; k++) {
            p = multModP(p, p);
            X2N[k] = p;
        }
    }

    private Crc32c() {}

    /** The CRC32C of {@code data}. */
    public static int compute(MemorySegment data) {
        CRC32C crc = new CRC32C();
        update(crc, data);
        return (int) crc.getValue();
    }

    /** Feeds {@code data} to {@code crc}. */
    public static void update(CRC32C crc, MemorySegment data) {
        long n = data.byteSize();
        boolean viewable =
                data.isNative() || data.heapBase().map(b -> b instanceof byte[]).orElse(false);
        if (viewable) {
            // ByteBuffer capacities are ints: views of at most 1 GiB.
            for (long off = 0; off < n; off += 1L << 30) {
                crc.update(data.asSlice(off, Math.min(1L << 30, n - off)).asByteBuffer());
            }
            return;
        }
        byte[] buf = new byte[(int) Math.min(HEAP_PIECE, n)];
        for (long off = 0; off < n; off += buf.length) {
            int len = (int) Math.min(buf.length, n - off);
            MemorySegment.copy(data, off, MemorySegment.ofArray(buf), 0, len);
            crc.update(ByteBuffer.wrap(buf, 0, len));
        }
    }

    /**
     * The CRC32C of a piece with CRC {@code first} followed by {@code lengthOfSecond} bytes with CRC {@code second}.
     */
    public static int combine(int first, int second, long lengthOfSecond) {
        if (lengthOfSecond <= 0) {
            return first;
        }
        return multModP(x2nModP(lengthOfSecond, 3), first) ^ second;
    }

    /** {@code a * b} modulo the polynomial (both reflected); {@code a} is never zero here. */
    private static int multModP(int a, int b) {
        int m = 1 << 31;
        int p = 0;
        while (true) {
            if ((a & m) != 0) {
                p ^= b;
                if ((a & (m - 1)) == 0) {
                    return p;
                }
            }
            m >>>= 1;
            b = (b & 1) != 0 ? (b >>> 1) ^ POLY : b >>> 1;
        }
    }

    /** x^(n * 2^k) modulo the polynomial: with k = 3, the operator that appends n zero bytes. */
    private static int x2nModP(long n, int k) {
        int p = 1 << 31; // x^0
        while (n != 0) {
            if ((n & 1) != 0) {
                p = multModP(X2N[k & 31], p);
            }
            n >>>= 1;
            k++;
        }
        return p;
    }
}
