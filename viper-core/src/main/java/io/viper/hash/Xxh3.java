package io.viper.hash;

import io.viper.errors.ViperConfigException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * XXH3-128: xxHash's {@code XXH3_128bits} with seed 0 and the default secret, over
 * {@link MemorySegment}s of any size, on or off the Java heap (memory-mapped files included). The
 * results equal those of xxHash 0.8 ({@code xxhsum -H2}) bit for bit.
 *
 * <p>{@link #hash128(MemorySegment)} hashes one segment, {@link Hasher} hashes data that arrives in
 * pieces, and {@link #hashAll(List, int)} hashes several segments on several threads (one segment
 * is always hashed by one thread: XXH3 is sequential within an input).
 *
 * <p>XXH3 is a fast non-cryptographic hash: it detects corruption (bit flips, truncation, reordered
 * chunks), not tampering.
 *
 * <p>Thread-safety: the static methods are thread-safe and keep no state. A segment must not be
 * written while it is being hashed. A {@link Hasher} is for one thread at a time.
 */
public final class Xxh3 {
    private Xxh3() {}

    /** Little-endian unaligned views, as xxHash reads its input on any platform. */
    static final ValueLayout.OfLong LE64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt LE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static final long P32_1 = 0x9E3779B1L;
    private static final long P32_2 = 0x85EBCA77L;
    private static final long P32_3 = 0xC2B2AE3DL;
    private static final long P64_1 = 0x9E3779B185EBCA87L;
    private static final long P64_2 = 0xC2B2AE3D27D4EB4FL;
    private static final long P64_3 = 0x165667B19E3779F9L;
    private static final long P64_4 = 0x85EBCA77C2B2AE63L;
    private static final long P64_5 = 0x27D4EB2F165667C5L;
    private static final long MASK32 = 0xFFFFFFFFL;

    private static final int STRIPE = 64;
    private static final int STRIPES_PER_BLOCK = 16; // (secret size 192 - stripe 64) / 8
    private static final int BLOCK = STRIPE * STRIPES_PER_BLOCK;
    private static final int MIDSIZE_MAX = 240;

    /** Secret offsets used by the algorithm (see xxhash.h). */
    private static final int SECRET_LAST_STRIPE = 192 - STRIPE - 7; // XXH_SECRET_LASTACC_START
    private static final int SECRET_MERGE_LOW = 11; // XXH_SECRET_MERGEACCS_START
    private static final int SECRET_MERGE_HIGH = 192 - 64 - 11;
    private static final int SECRET_MID_START = 3; // XXH3_MIDSIZE_STARTOFFSET
    private static final int SECRET_MID_LAST = 136 - 17 - 16; // SECRET_SIZE_MIN - MIDSIZE_LASTOFFSET - 16

    /** xxHash's default secret, {@code XXH3_kSecret} (192 bytes, taken from FARSH). */
    private static final String SECRET_HEX =
            "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
            + "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
            + "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
            + "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
            + "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
            + "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e";

    /** {@code SEC[o]}: the little-endian long at byte offset {@code o} of the secret, o in 0..184. */
    private static final long[] SEC;
    /** The secret's aligned longs, {@code K[j] == SEC[8 * j]}, j in 0..23: the stripe loop's keys. */
    private static final long[] K;

    static {
        byte[] secret = new byte[SECRET_HEX.length() / 2];
        for (int i = 0; i < secret.length; i++) {
            secret[i] = (byte) Integer.parseInt(SECRET_HEX, 2 * i, 2 * i + 2, 16);
        }
        MemorySegment s = MemorySegment.ofArray(secret);
        SEC = new long[secret.length - 7];
        for (int o = 0; o < SEC.length; o++) {
            SEC[o] = s.get(LE64, o);
        }
        K = new long[secret.length / 8];
        for (int j = 0; j < K.length; j++) {
            K[j] = SEC[8 * j];
        }
    }

    private static final long K16 = SEC[128];
    private static final long K17 = SEC[136];
    private static final long K18 = SEC[144];
    private static final long K19 = SEC[152];
    private static final long K20 = SEC[160];
    private static final long K21 = SEC[168];
    private static final long K22 = SEC[176];
    private static final long K23 = SEC[184];

    // ------------------------------------------------------------------ public API

    /**
     * The XXH3-128 hash (seed 0, default secret) of all bytes of {@code data}, equal to
     * {@code XXH3_128bits(data, size)} in xxHash and to what {@code xxhsum -H2} prints for a file
     * with these bytes.
     *
     * @param data the bytes to hash, any size, heap or native (for example a mapped file region)
     * @return the hash
     * @throws IllegalStateException if {@code data}'s arena is closed
     * @throws WrongThreadException if {@code data} is confined to another thread
     */
    public static ContentHash hash128(MemorySegment data) {
        long len = data.byteSize();
        if (len <= MIDSIZE_MAX) {
            return hashShort(data, (int) len);
        }
        long[] acc = initialAcc();
        accumulate(acc, data, 0, (len - 1) / STRIPE, 0);
        lastStripe(acc, data, len - STRIPE);
        return finishLong(acc, len);
    }

    /**
     * Hashes each segment with {@link #hash128(MemorySegment)}, one task per segment on
     * {@code executor}, largest segments first; waits for all of them. A segment that is confined to
     * the calling thread is hashed by the calling thread.
     *
     * @param segments the segments; not modified
     * @param executor runs the hashing tasks; not shut down
     * @return the hashes, {@code result[i]} of {@code segments.get(i)}
     * @throws CancellationException if the calling thread is interrupted while waiting (its interrupt
     *     status is set again and the tasks not yet started are cancelled)
     * @throws RuntimeException the first exception a hashing task threw, such as
     *     {@link IllegalStateException} for a segment of a closed arena
     */
    public static ContentHash[] hashAll(List<MemorySegment> segments, ExecutorService executor) {
        Objects.requireNonNull(executor, "executor");
        MemorySegment[] segs = segments.toArray(MemorySegment[]::new);
        for (int i = 0; i < segs.length; i++) {
            Objects.requireNonNull(segs[i], () -> "segment is null");
        }
        ContentHash[] out = new ContentHash[segs.length];
        Integer[] order = new Integer[segs.length];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, Comparator.comparingLong((Integer i) -> segs[i].byteSize()).reversed());
        List<Future<?>> futures = new ArrayList<>(segs.length);
        for (int i : order) {
            MemorySegment seg = segs[i];
            futures.add(executor.submit(() -> {
                if (seg.isAccessibleBy(Thread.currentThread())) {
                    out[i] = hash128(seg);
                }
            }));
        }
        Throwable failure = null;
        for (int f = 0; f < futures.size(); f++) {
            try {
                futures.get(f).get();
            } catch (ExecutionException e) {
                if (failure == null) {
                    failure = e.getCause();
                }
            } catch (InterruptedException e) {
                for (Future<?> g : futures) {
                    g.cancel(false);
                }
                Thread.currentThread().interrupt();
                CancellationException c = new CancellationException("interrupted while hashing " + segs.length + " segments");
                c.initCause(e);
                throw c;
            }
        }
        if (failure instanceof RuntimeException r) {
            throw r;
        }
        if (failure instanceof Error err) {
            throw err;
        }
        if (failure != null) {
            throw new IllegalStateException("hashing failed: " + failure, failure);
        }
        for (int i = 0; i < segs.length; i++) {
            if (out[i] == null) { // confined to this thread (or to none that could run it)
                out[i] = hash128(segs[i]);
            }
        }
        return out;
    }

    /**
     * Hashes each segment with {@link #hash128(MemorySegment)} on up to {@code parallelism} threads
     * that live for this call only, largest segments first. With {@code parallelism == 1}, or one
     * segment, everything runs on the calling thread.
     *
     * @param segments the segments; not modified
     * @param parallelism the most threads to use, at least 1
     * @return the hashes, {@code result[i]} of {@code segments.get(i)}
     * @throws ViperConfigException if {@code parallelism < 1}
     * @throws CancellationException if the calling thread is interrupted while waiting
     */
    public static ContentHash[] hashAll(List<MemorySegment> segments, int parallelism) {
        if (parallelism < 1) {
            throw new ViperConfigException("hash parallelism must be at least 1, got " + parallelism);
        }
        int threads = Math.min(parallelism, segments.size());
        if (threads <= 1) {
            ContentHash[] out = new ContentHash[segments.size()];
            for (int i = 0; i < out.length; i++) {
                out[i] = hash128(segments.get(i));
            }
            return out;
        }
        try (ExecutorService pool = Executors.newFixedThreadPool(threads,
                Thread.ofPlatform().name("viper-hash-", 0).daemon(true).factory())) {
            return hashAll(segments, pool);
        }
    }

    /**
     * Incremental XXH3-128: feed the bytes with {@link #update(MemorySegment)} in any number of
     * pieces of any sizes, then {@link #digest()} gives the same hash as {@link Xxh3#hash128} of all
     * the pieces concatenated. Handy for verifying a tensor chunk by chunk as it arrives.
     *
     * <p>Not thread-safe: use a hasher from one thread at a time. Keeps a copy of at most 256 bytes
     * of the input, never a reference to a segment.
     */
    public static final class Hasher {
        private static final int BUFFER = 256; // four stripes, as XXH3_INTERNALBUFFER_SIZE

        /**
         * The bytes not yet accumulated, at [0, buffered); once stripes have been accumulated, its
         * last stripe holds the 64 bytes before the buffered ones (while buffered is below 64).
         */
        private final byte[] buf = new byte[BUFFER];
        private final MemorySegment bufSeg = MemorySegment.ofArray(buf);
        private final long[] acc = new long[8];
        private int stripeInBlock;
        private int buffered;
        private long total;

        /** A hasher that has seen no bytes. */
        public Hasher() {
            reset();
        }

        /**
         * Forgets all input, as if new.
         *
         * @return this hasher
         */
        public Hasher reset() {
            System.arraycopy(initialAcc(), 0, acc, 0, acc.length);
            stripeInBlock = 0;
            buffered = 0;
            total = 0;
            return this;
        }

        /**
         * Adds all bytes of {@code data} to the input.
         *
         * @param data the next bytes; only read during this call
         * @return this hasher
         */
        public Hasher update(MemorySegment data) {
            long len = data.byteSize();
            if (len == 0) {
                return this;
            }
            if (buffered + len <= BUFFER) {
                MemorySegment.copy(data, 0, bufSeg, buffered, len);
                buffered += (int) len;
                total += len;
                return this;
            }
            // More than BUFFER bytes are known: every stripe but the last is followed by another
            // byte, so it is an ordinary stripe and not the final one.
            long off = 0;
            if (buffered > 0) {
                int load = BUFFER - buffered;
                MemorySegment.copy(data, 0, bufSeg, buffered, load);
                off = load;
                stripeInBlock = accumulate(acc, bufSeg, 0, BUFFER / STRIPE, stripeInBlock);
                buffered = 0;
            }
            long stripes = (len - off - 1) / STRIPE; // leaves 1..64 bytes
            if (stripes > 0) {
                stripeInBlock = accumulate(acc, data, off, stripes, stripeInBlock);
                off += stripes * STRIPE;
                MemorySegment.copy(data, off - STRIPE, bufSeg, BUFFER - STRIPE, STRIPE);
            }
            buffered = (int) (len - off);
            MemorySegment.copy(data, off, bufSeg, 0, buffered);
            total += len;
            return this;
        }

        /**
         * The number of bytes added since creation or the last {@link #reset()}.
         *
         * @return the input length so far
         */
        public long length() {
            return total;
        }

        /**
         * The hash of all bytes added so far. Does not change the hasher: more bytes may be added
         * afterwards.
         *
         * @return the same as {@link Xxh3#hash128} of the bytes added so far
         */
        public ContentHash digest() {
            if (total <= MIDSIZE_MAX) {
                return hashShort(bufSeg, (int) total);
            }
            long[] a = acc.clone();
            if (buffered >= STRIPE) {
                accumulate(a, bufSeg, 0, (buffered - 1) / STRIPE, stripeInBlock);
                lastStripe(a, bufSeg, buffered - STRIPE);
            } else {
                byte[] last = new byte[STRIPE];
                int catchUp = STRIPE - buffered;
                System.arraycopy(buf, BUFFER - catchUp, last, 0, catchUp);
                System.arraycopy(buf, 0, last, catchUp, buffered);
                lastStripe(a, MemorySegment.ofArray(last), 0);
            }
            return finishLong(a, total);
        }
    }

    // ------------------------------------------------------------------ long inputs (> 240 bytes)

    private static long[] initialAcc() {
        return new long[] {P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1};
    }

    /**
     * Accumulates {@code stripes} whole 64-byte stripes of {@code seg} from {@code off}, the first
     * being stripe {@code stripeInBlock} (0..15) of its block, and scrambles the accumulators after
     * the 16th stripe of every block. Only for stripes followed by at least one more input byte.
     *
     * <p>Native (including mapped) and heap segments go to two copies of the same loop: HotSpot
     * profiles the segment classes per method, and a loop that has seen both kinds (the Hasher's
     * heap buffer and a tensor off-heap, say) no longer inlines the memory accesses and runs
     * several times slower.
     *
     * @return the stripe position in the block after the last stripe
     */
    static int accumulate(long[] acc, MemorySegment seg, long off, long stripes, int stripeInBlock) {
        return seg.isNative()
                ? accumulateNative(acc, seg, off, stripes, stripeInBlock)
                : accumulateHeap(acc, seg, off, stripes, stripeInBlock);
    }

    /** {@link #accumulate} for native segments. */
    private static int accumulateNative(long[] acc, MemorySegment seg, long off, long stripes, int stripeInBlock) {
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
        acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
        acc[4] = a4; acc[5] = a5; acc[6] = a6; acc[7] = a7;
        return pos;
    }

    /** {@link #accumulate} for heap segments; the same code as {@link #accumulateNative}. */
    private static int accumulateHeap(long[] acc, MemorySegment seg, long off, long stripes, int stripeInBlock) {
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
        acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
        acc[4] = a4; acc[5] = a5; acc[6] = a6; acc[7] = a7;
        return pos;
    }

    private static long scramble(long a, long key) {
        return (a ^ (a >>> 47) ^ key) * P32_1;
    }

    /** The final stripe, the input's last 64 bytes, with its own secret offset. */
    private static void lastStripe(long[] acc, MemorySegment seg, long off) {
        for (int i = 0; i < 8; i++) {
            long d = seg.get(LE64, off + 8L * i);
            long x = d ^ SEC[SECRET_LAST_STRIPE + 8 * i];
            acc[i ^ 1] += d;
            acc[i] += (x & MASK32) * (x >>> 32);
        }
    }

    private static ContentHash finishLong(long[] acc, long len) {
        long low = mergeAccs(acc, SECRET_MERGE_LOW, len * P64_1);
        long high = mergeAccs(acc, SECRET_MERGE_HIGH, ~(len * P64_2));
        return new ContentHash(high, low);
    }

    private static long mergeAccs(long[] acc, int secretOff, long start) {
        long r = start;
        for (int i = 0; i < 4; i++) {
            r += mulFold64(acc[2 * i] ^ SEC[secretOff + 16 * i], acc[2 * i + 1] ^ SEC[secretOff + 16 * i + 8]);
        }
        return avalanche(r);
    }

    // ------------------------------------------------------------------ short inputs (<= 240 bytes)

    private static ContentHash hashShort(MemorySegment in, int len) {
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

    // ------------------------------------------------------------------ mixers

    private static long mulFold64(long a, long b) {
        return (a * b) ^ Math.unsignedMultiplyHigh(a, b);
    }

    /** XXH3_avalanche. */
    private static long avalanche(long h) {
        h ^= h >>> 37;
        h *= 0x165667919E3779F9L;
        return h ^ (h >>> 32);
    }

    /** XXH64_avalanche. */
    private static long xxh64Avalanche(long h) {
        h ^= h >>> 33;
        h *= P64_2;
        h ^= h >>> 29;
        h *= P64_3;
        return h ^ (h >>> 32);
    }
}
