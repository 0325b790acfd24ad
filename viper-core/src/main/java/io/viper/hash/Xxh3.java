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
 * XXH3-128: xxHash's {@code XXH3_128bits} with seed 0 and the default secret, over {@link MemorySegment}s of any size,
 * on or off the Java heap (memory-mapped files included). The results equal those of xxHash 0.8 ({@code xxhsum -H2})
 * bit for bit.
 *
 * <p>{@link #hash128(MemorySegment)} hashes one segment, {@link Hasher} hashes data that arrives in pieces, and
 * {@link #hashAll(List, int)} hashes several segments on several threads (one segment is always hashed by one thread:
 * XXH3 is sequential within an input).
 *
 * <p>XXH3 is a fast non-cryptographic hash: it detects corruption (bit flips, truncation, reordered chunks), not
 * tampering.
 *
 * <p>Thread-safety: the static methods are thread-safe and keep no state. A segment must not be written while it is
 * being hashed. A {@link Hasher} is for one thread at a time.
 */
public final class Xxh3 {
    private Xxh3() {}

    /** Little-endian unaligned views, as xxHash reads its input on any platform. */
    static final ValueLayout.OfLong LE64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static final ValueLayout.OfInt LE32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static final long P32_1 = 0x9E3779B1L;
    static final long P32_2 = 0x85EBCA77L;
    static final long P32_3 = 0xC2B2AE3DL;
    static final long P64_1 = 0x9E3779B185EBCA87L;
    static final long P64_2 = 0xC2B2AE3D27D4EB4FL;
    static final long P64_3 = 0x165667B19E3779F9L;
    static final long P64_4 = 0x85EBCA77C2B2AE63L;
    static final long P64_5 = 0x27D4EB2F165667C5L;
    static final long MASK32 = 0xFFFFFFFFL;

    static final int STRIPE = 64;
    static final int STRIPES_PER_BLOCK = 16; // (secret size 192 - stripe 64) / 8
    static final int BLOCK = STRIPE * STRIPES_PER_BLOCK;
    static final int MIDSIZE_MAX = 240;

    /** Secret offsets used by the algorithm (see xxhash.h). */
    private static final int SECRET_LAST_STRIPE = 192 - STRIPE - 7; // XXH_SECRET_LASTACC_START

    private static final int SECRET_MERGE_LOW = 11; // XXH_SECRET_MERGEACCS_START
    private static final int SECRET_MERGE_HIGH = 192 - 64 - 11;
    static final int SECRET_MID_START = 3; // XXH3_MIDSIZE_STARTOFFSET
    static final int SECRET_MID_LAST = 136 - 17 - 16; // SECRET_SIZE_MIN - MIDSIZE_LASTOFFSET - 16

    /** xxHash's default secret, {@code XXH3_kSecret} (192 bytes, taken from FARSH). */
    private static final String SECRET_HEX = "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
            + "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
            + "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
            + "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
            + "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d316552629d4689e"
            + "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e";

    /** {@code SEC[o]}: the little-endian long at byte offset {@code o} of the secret, o in 0..184. */
    static final long[] SEC;
    /** The secret's aligned longs, {@code K[j] == SEC[8 * j]}, j in 0..23: the stripe loop's keys. */
    static final long[] K;

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

    static final long K16 = SEC[128];
    static final long K17 = SEC[136];
    static final long K18 = SEC[144];
    static final long K19 = SEC[152];
    static final long K20 = SEC[160];
    static final long K21 = SEC[168];
    static final long K22 = SEC[176];
    static final long K23 = SEC[184];

    // ------------------------------------------------------------------ public API

    /**
     * The XXH3-128 hash (seed 0, default secret) of all bytes of {@code data}, equal to {@code XXH3_128bits(data,
     * size)} in xxHash and to what {@code xxhsum -H2} prints for a file with these bytes.
     *
     * @param data the bytes to hash, any size, heap or native (for example a mapped file region)
     * @return the hash
     * @throws IllegalStateException if {@code data}'s arena is closed
     * @throws WrongThreadException if {@code data} is confined to another thread
     */
    public static ContentHash hash128(MemorySegment data) {
        long len = data.byteSize();
        if (len <= MIDSIZE_MAX) {
            return Xxh3Short.hash(data, (int) len);
        }
        long[] acc = initialAcc();
        accumulate(acc, data, 0, (len - 1) / STRIPE, 0);
        lastStripe(acc, data, len - STRIPE);
        return finishLong(acc, len);
    }

    /**
     * Hashes each segment with {@link #hash128(MemorySegment)}, one task per segment on {@code executor}, largest
     * segments first; waits for all of them. A segment that is confined to the calling thread is hashed by the calling
     * thread.
     *
     * @param segments the segments; not modified
     * @param executor runs the hashing tasks; not shut down
     * @return the hashes, {@code result[i]} of {@code segments.get(i)}
     * @throws CancellationException if the calling thread is interrupted while waiting (its interrupt status is set
     *     again and the tasks not yet started are cancelled)
     * @throws RuntimeException the first exception a hashing task threw, such as {@link IllegalStateException} for a
     *     segment of a closed arena
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
        Arrays.sort(
                order,
                Comparator.comparingLong((Integer i) -> segs[i].byteSize()).reversed());
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
                CancellationException c =
                        new CancellationException("interrupted while hashing " + segs.length + " segments");
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
     * Hashes each segment with {@link #hash128(MemorySegment)} on up to {@code parallelism} threads that live for this
     * call only, largest segments first. With {@code parallelism == 1}, or one segment, everything runs on the calling
     * thread.
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
        try (ExecutorService pool = Executors.newFixedThreadPool(
                threads, Thread.ofPlatform().name("viper-hash-", 0).daemon(true).factory())) {
            return hashAll(segments, pool);
        }
    }

    /**
     * Incremental XXH3-128: feed the bytes with {@link #update(MemorySegment)} in any number of pieces of any sizes,
     * then {@link #digest()} gives the same hash as {@link Xxh3#hash128} of all the pieces concatenated. Handy for
     * verifying a tensor chunk by chunk as it arrives.
     *
     * <p>Not thread-safe: use a hasher from one thread at a time. Keeps a copy of at most 256 bytes of the input, never
     * a reference to a segment.
     */
    public static final class Hasher {
        private static final int BUFFER = 256; // four stripes, as XXH3_INTERNALBUFFER_SIZE

        /**
         * The bytes not yet accumulated, at [0, buffered); once stripes have been accumulated, its last stripe holds
         * the 64 bytes before the buffered ones (while buffered is below 64).
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
         * The hash of all bytes added so far. Does not change the hasher: more bytes may be added afterwards.
         *
         * @return the same as {@link Xxh3#hash128} of the bytes added so far
         */
        public ContentHash digest() {
            if (total <= MIDSIZE_MAX) {
                return Xxh3Short.hash(bufSeg, (int) total);
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
     * Accumulates {@code stripes} whole 64-byte stripes of {@code seg} from {@code off}, the first being stripe
     * {@code stripeInBlock} (0..15) of its block, and scrambles the accumulators after the 16th stripe of every block.
     * Only for stripes followed by at least one more input byte.
     *
     * <p>Native (including mapped) and heap segments go to two copies of the same loop ({@link Xxh3NativeLoop},
     * {@link Xxh3HeapLoop}): HotSpot profiles the segment classes per method, and a loop that has seen both kinds (the
     * Hasher's heap buffer and a tensor off-heap, say) no longer inlines the memory accesses and runs several times
     * slower.
     *
     * @return the stripe position in the block after the last stripe
     */
    static int accumulate(long[] acc, MemorySegment seg, long off, long stripes, int stripeInBlock) {
        return seg.isNative()
                ? Xxh3NativeLoop.accumulate(acc, seg, off, stripes, stripeInBlock)
                : Xxh3HeapLoop.accumulate(acc, seg, off, stripes, stripeInBlock);
    }

    static long scramble(long a, long key) {
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

    // ------------------------------------------------------------------ mixers

    static long mulFold64(long a, long b) {
        return (a * b) ^ Math.unsignedMultiplyHigh(a, b);
    }

    /** XXH3_avalanche. */
    static long avalanche(long h) {
        h ^= h >>> 37;
        h *= 0x165667919E3779F9L;
        return h ^ (h >>> 32);
    }

    /** XXH64_avalanche. */
    static long xxh64Avalanche(long h) {
        h ^= h >>> 33;
        h *= P64_2;
        h ^= h >>> 29;
        h *= P64_3;
        return h ^ (h >>> 32);
    }
}
