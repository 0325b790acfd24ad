package io.viper.hash;

import static io.viper.hash.Xxh3.BLOCK;
import static io.viper.hash.Xxh3.K;
import static io.viper.hash.Xxh3.K16;
import static io.viper.hash.Xxh3.K17;
import static io.viper.hash.Xxh3.K18;
import static io.viper.hash.Xxh3.K19;
import static io.viper.hash.Xxh3.K20;
import static io.viper.hash.Xxh3.K21;
import static io.viper.hash.Xxh3.K22;
import static io.viper.hash.Xxh3.K23;
import static io.viper.hash.Xxh3.LE64;
import static io.viper.hash.Xxh3.MASK32;
import static io.viper.hash.Xxh3.STRIPE;
import static io.viper.hash.Xxh3.STRIPES_PER_BLOCK;
import static io.viper.hash.Xxh3.scramble;

import java.lang.foreign.MemorySegment;

/**
 * XXH3's stripe loop for heap segments (arrays, such as the {@link Xxh3.Hasher}'s buffer). The same code as
 * {@link Xxh3NativeLoop}, deliberately a second copy: see {@link Xxh3#accumulate}. A change here must be made there
 * too. Stateless; called by any thread.
 */
final class Xxh3HeapLoop {
    private Xxh3HeapLoop() {}

    /** {@link Xxh3#accumulate} for a heap segment. */
    static int accumulate(long[] acc, MemorySegment seg, long off, long stripes, int stripeInBlock) {
        long a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
        long a4 = acc[4], a5 = acc[5], a6 = acc[6], a7 = acc[7];
        final long[] k = K;
        int pos = stripeInBlock;
        while (stripes > 0) {
            // Whole blocks: a slice of constant size lets the JIT drop every bounds check in the block.
            if (pos == 0 && stripes >= STRIPES_PER_BLOCK) {
                MemorySegment block = seg.asSlice(off, BLOCK);
                for (int i = 0; i < STRIPES_PER_BLOCK; i++) {
                    long p = (long) i * STRIPE;
                    long d0 = block.get(LE64, p);
                    long d1 = block.get(LE64, p + 8);
                    long d2 = block.get(LE64, p + 16);
                    long d3 = block.get(LE64, p + 24);
                    long d4 = block.get(LE64, p + 32);
                    long d5 = block.get(LE64, p + 40);
                    long d6 = block.get(LE64, p + 48);
                    long d7 = block.get(LE64, p + 56);
                    long x0 = d0 ^ k[i];
                    long x1 = d1 ^ k[i + 1];
                    long x2 = d2 ^ k[i + 2];
                    long x3 = d3 ^ k[i + 3];
                    long x4 = d4 ^ k[i + 4];
                    long x5 = d5 ^ k[i + 5];
                    long x6 = d6 ^ k[i + 6];
                    long x7 = d7 ^ k[i + 7];
                    // lanes are swapped pairwise for the plain data (xxHash's acc[i ^ 1] += data[i])
                    a0 += d1 + (x0 & MASK32) * (x0 >>> 32);
                    a1 += d0 + (x1 & MASK32) * (x1 >>> 32);
                    a2 += d3 + (x2 & MASK32) * (x2 >>> 32);
                    a3 += d2 + (x3 & MASK32) * (x3 >>> 32);
                    a4 += d5 + (x4 & MASK32) * (x4 >>> 32);
                    a5 += d4 + (x5 & MASK32) * (x5 >>> 32);
                    a6 += d7 + (x6 & MASK32) * (x6 >>> 32);
                    a7 += d6 + (x7 & MASK32) * (x7 >>> 32);
                }
                off += BLOCK;
                stripes -= STRIPES_PER_BLOCK;
                a0 = scramble(a0, K16);
                a1 = scramble(a1, K17);
                a2 = scramble(a2, K18);
                a3 = scramble(a3, K19);
                a4 = scramble(a4, K20);
                a5 = scramble(a5, K21);
                a6 = scramble(a6, K22);
                a7 = scramble(a7, K23);
                continue;
            }
            int n = (int) Math.min(STRIPES_PER_BLOCK - pos, stripes);
            // Part of a block: a slice of exactly these stripes, so the JIT can still check bounds
            // once per slice rather than per read.
            MemorySegment block = seg.asSlice(off, (long) n * STRIPE);
            for (int i = 0; i < n; i++) {
                long p = (long) i * STRIPE;
                int s = pos + i;
                long d0 = block.get(LE64, p);
                long d1 = block.get(LE64, p + 8);
                long d2 = block.get(LE64, p + 16);
                long d3 = block.get(LE64, p + 24);
                long d4 = block.get(LE64, p + 32);
                long d5 = block.get(LE64, p + 40);
                long d6 = block.get(LE64, p + 48);
                long d7 = block.get(LE64, p + 56);
                long x0 = d0 ^ k[s];
                long x1 = d1 ^ k[s + 1];
                long x2 = d2 ^ k[s + 2];
                long x3 = d3 ^ k[s + 3];
                long x4 = d4 ^ k[s + 4];
                long x5 = d5 ^ k[s + 5];
                long x6 = d6 ^ k[s + 6];
                long x7 = d7 ^ k[s + 7];
                // lanes are swapped pairwise for the plain data (xxHash's acc[i ^ 1] += data[i])
                a0 += d1 + (x0 & MASK32) * (x0 >>> 32);
                a1 += d0 + (x1 & MASK32) * (x1 >>> 32);
                a2 += d3 + (x2 & MASK32) * (x2 >>> 32);
                a3 += d2 + (x3 & MASK32) * (x3 >>> 32);
                a4 += d5 + (x4 & MASK32) * (x4 >>> 32);
                a5 += d4 + (x5 & MASK32) * (x5 >>> 32);
                a6 += d7 + (x6 & MASK32) * (x6 >>> 32);
                a7 += d6 + (x7 & MASK32) * (x7 >>> 32);
            }
            off += (long) n * STRIPE;
            stripes -= n;
            pos += n;
            if (pos == STRIPES_PER_BLOCK) {
                a0 = scramble(a0, K16);
                a1 = scramble(a1, K17);
                a2 = scramble(a2, K18);
                a3 = scramble(a3, K19);
                a4 = scramble(a4, K20);
                a5 = scramble(a5, K21);
                a6 = scramble(a6, K22);
                a7 = scramble(a7, K23);
                pos = 0;
            }
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
        acc[4] = a4;
        acc[5] = a5;
        acc[6] = a6;
        acc[7] = a7;
        return pos;
    }
}
