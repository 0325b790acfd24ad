package io.viper.hash;

import static io.viper.hash.Xxh3.LE32;
import static io.viper.hash.Xxh3.LE64;
import static io.viper.hash.Xxh3.MASK32;
import static io.viper.hash.Xxh3.P32_2;
import static io.viper.hash.Xxh3.P64_1;
import static io.viper.hash.Xxh3.P64_2;
import static io.viper.hash.Xxh3.P64_4;
import static io.viper.hash.Xxh3.SEC;
import static io.viper.hash.Xxh3.SECRET_MID_LAST;
import static io.viper.hash.Xxh3.SECRET_MID_START;
import static io.viper.hash.Xxh3.avalanche;
import static io.viper.hash.Xxh3.mulFold64;
import static io.viper.hash.Xxh3.xxh64Avalanche;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * XXH3-128 of short inputs (0 to 240 bytes), which xxHash hashes without the stripe loop, in four size classes.
 * Stateless; called by any thread.
 */
final class Xxh3Short {
    private Xxh3Short() {}

    /** The XXH3-128 of the first {@code len} bytes of {@code in}, {@code len <= 240}. */
    static ContentHash hash(MemorySegment in, int len) {
        if (len > 128) {
            return len129to240(in, len);
        }
        if (len > 16) {
            return len17to128(in, len);
        }
        if (len > 8) {
            return len9to16(in, len);
        }
        if (len >= 4) {
            return len4to8(in, len);
        }
        if (len > 0) {
            return len1to3(in, len);
        }
        return new ContentHash(xxh64Avalanche(SEC[80] ^ SEC[88]), xxh64Avalanche(SEC[64] ^ SEC[72]));
    }

    private static ContentHash len1to3(MemorySegment in, int len) {
        int c1 = Byte.toUnsignedInt(in.get(ValueLayout.JAVA_BYTE, 0));
        int c2 = Byte.toUnsignedInt(in.get(ValueLayout.JAVA_BYTE, len >> 1));
        int c3 = Byte.toUnsignedInt(in.get(ValueLayout.JAVA_BYTE, len - 1));
        int combinedLow = (c1 << 16) | (c2 << 24) | c3 | (len << 8);
        int combinedHigh = Integer.rotateLeft(Integer.reverseBytes(combinedLow), 13);
        long flipLow = (SEC[0] ^ SEC[4]) & MASK32;
        long flipHigh = (SEC[8] ^ SEC[12]) & MASK32;
        long low = xxh64Avalanche(Integer.toUnsignedLong(combinedLow) ^ flipLow);
        long high = xxh64Avalanche(Integer.toUnsignedLong(combinedHigh) ^ flipHigh);
        return new ContentHash(high, low);
    }

    private static ContentHash len4to8(MemorySegment in, int len) {
        long inLow = Integer.toUnsignedLong(in.get(LE32, 0));
        long inHigh = Integer.toUnsignedLong(in.get(LE32, len - 4));
        long keyed = (inLow + (inHigh << 32)) ^ (SEC[16] ^ SEC[24]);
        long m = P64_1 + ((long) len << 2);
        long low = keyed * m;
        long high = Math.unsignedMultiplyHigh(keyed, m);
        high += low << 1;
        low ^= high >>> 3;
        low ^= low >>> 35;
        low *= 0x9FB21C651E98DF25L;
        low ^= low >>> 28;
        return new ContentHash(avalanche(high), low);
    }

    private static ContentHash len9to16(MemorySegment in, int len) {
        long flipLow = SEC[32] ^ SEC[40];
        long flipHigh = SEC[48] ^ SEC[56];
        long inLow = in.get(LE64, 0);
        long inHigh = in.get(LE64, len - 8);
        long x = inLow ^ inHigh ^ flipLow;
        long mLow = x * P64_1;
        long mHigh = Math.unsignedMultiplyHigh(x, P64_1);
        mLow += (long) (len - 1) << 54;
        inHigh ^= flipHigh;
        mHigh += inHigh + (inHigh & MASK32) * (P32_2 - 1);
        mLow ^= Long.reverseBytes(mHigh);
        long hLow = mLow * P64_2;
        long hHigh = Math.unsignedMultiplyHigh(mLow, P64_2) + mHigh * P64_2;
        return new ContentHash(avalanche(hHigh), avalanche(hLow));
    }

    private static ContentHash len17to128(MemorySegment in, int len) {
        long accLow = len * P64_1;
        long accHigh = 0;
        for (int i = (len - 1) / 32; i >= 0; i--) { // pairs from the middle out, as xxHash does
            long off1 = 16L * i;
            long off2 = len - 16L * (i + 1);
            int secretOff = 32 * i;
            long[] lh = mix32(accLow, accHigh, in, off1, off2, secretOff);
            accLow = lh[0];
            accHigh = lh[1];
        }
        return finishMid(accLow, accHigh, len);
    }

    private static ContentHash len129to240(MemorySegment in, int len) {
        long accLow = len * P64_1;
        long accHigh = 0;
        for (int i = 0; i < 4; i++) {
            long[] lh = mix32(accLow, accHigh, in, 32L * i, 32L * i + 16, 32 * i);
            accLow = lh[0];
            accHigh = lh[1];
        }
        accLow = avalanche(accLow);
        accHigh = avalanche(accHigh);
        int rounds = len / 32;
        for (int i = 4; i < rounds; i++) {
            long[] lh = mix32(accLow, accHigh, in, 32L * i, 32L * i + 16, SECRET_MID_START + 32 * (i - 4));
            accLow = lh[0];
            accHigh = lh[1];
        }
        long[] lh = mix32(accLow, accHigh, in, len - 16, len - 32, SECRET_MID_LAST);
        return finishMid(lh[0], lh[1], len);
    }

    /** XXH128_mix32B with seed 0; returns {low, high}. */
    private static long[] mix32(long accLow, long accHigh, MemorySegment in, long off1, long off2, int secretOff) {
        long a = in.get(LE64, off1);
        long b = in.get(LE64, off1 + 8);
        long c = in.get(LE64, off2);
        long d = in.get(LE64, off2 + 8);
        accLow += mulFold64(a ^ SEC[secretOff], b ^ SEC[secretOff + 8]);
        accLow ^= c + d;
        accHigh += mulFold64(c ^ SEC[secretOff + 16], d ^ SEC[secretOff + 24]);
        accHigh ^= a + b;
        return new long[] {accLow, accHigh};
    }

    private static ContentHash finishMid(long accLow, long accHigh, long len) {
        long low = accLow + accHigh;
        long high = accLow * P64_1 + accHigh * P64_4 + len * P64_2;
        return new ContentHash(-avalanche(high), avalanche(low));
    }
}
