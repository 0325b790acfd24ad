package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperCorruptDataException;
import io.viper.hash.HashAlgorithm;
import io.viper.internal.TensorHashes;
import io.viper.manifest.BlockList;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * A copy made through the verifier ({@code Arrivals.copy}, as the ucx transport makes from a producer's mapped memory
 * and the host loader from the version it holds) lands every byte and is checked as it lands: by the copying threads,
 * with no hashing handed to the pool.
 */
class VerifierCopyTest {
    private static final long PIECE = TensorHashes.PIECE;
    private static final CountingPool POOL = new CountingPool(2);
    private static final Location LOC = new Location(URI.create("mem://src"), Tier.HOST);
    /** Tensors whose pieces straddle every unit boundary: empty, tiny, a piece and a bit, several pieces, odd tails. */
    private static final long[] SIZES = {0, 100, PIECE + 17, 3 * PIECE, 5000, 2 * PIECE + 3, 7, 4 * PIECE - 1};

    @AfterAll
    static void stop() {
        POOL.shutdown();
    }

    private static Manifest manifest(MemorySegment data) {
        List<TensorEntry> entries = new ArrayList<>();
        long off = 0;
        for (int i = 0; i < SIZES.length; i++) {
            TensorInfo info = new TensorInfo("t" + i, DType.U8, new long[] {SIZES[i]}, off, SIZES[i]);
            entries.add(new TensorEntry(
                    info,
                    HashAlgorithm.CRC32C.hash(data.asSlice(off, SIZES[i])),
                    OptionalLong.empty(),
                    BlockList.NONE));
            off += SIZES[i];
        }
        return new Manifest("m", 1, "test", 0, new LinkedHashMap<>(), entries, List.of(LOC));
    }

    private static MemorySegment random(Arena arena, long n) {
        MemorySegment s = arena.allocate(n);
        SplittableRandom rnd = new SplittableRandom(21);
        for (long i = 0; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return s;
    }

    private static long total() {
        long t = 0;
        for (long s : SIZES) {
            t += s;
        }
        return t;
    }

    /**
     * Copies {@code source} into {@code dst} through {@code check} in a few calls of odd sizes, as a transport's chunks
     * come.
     */
    private static void copyInChunks(Verifier.Overlapped check, MemorySegment source, MemorySegment dst) {
        long total = source.byteSize();
        long[] cuts = {0, 3, PIECE / 2 + 1, 5 * PIECE + 9, total};
        for (int i = 0; i + 1 < cuts.length; i++) {
            long n = cuts[i + 1] - cuts[i];
            check.copy(source.asSlice(cuts[i], n), dst.asSlice(cuts[i], n), cuts[i]);
        }
    }

    @Test
    void everyByteLandsAndIsCheckedByTheCopyingThreads() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment source = random(arena, total());
            Manifest m = manifest(source);
            MemorySegment dst = arena.allocate(total());
            Verifier verifier = new Verifier("m", POOL, 1);
            int before = POOL.handed();
            try (Verifier.Overlapped check = verifier.overlapped(m, LOC, dst)) {
                copyInChunks(check, source, dst);
                check.verify();
            }
            assertEquals(-1, dst.mismatch(source), "the destination holds the source's bytes");
            // One helper per call of two units or more (the last two calls); a piece hashed on the pool would add a
            // task.
            assertEquals(2, POOL.handed() - before, "only the copy's helpers went to the pool, no hashing task");
        }
    }

    @Test
    void aSourceThatDiffersFromTheManifestIsCaughtWhereverTheByteIs() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment good = random(arena, total());
            Manifest m = manifest(good);
            Verifier verifier = new Verifier("m", POOL, 1);
            long[] tensorAt = new long[SIZES.length];
            for (int i = 1; i < SIZES.length; i++) {
                tensorAt[i] = tensorAt[i - 1] + SIZES[i - 1];
            }
            // A byte in the first piece of t2, the last piece of t3 (copied by the helper, likely), and t7's tail.
            long[] bad = {tensorAt[2] + 1, tensorAt[3] + 3 * PIECE - 1, total() - 1};
            int[] tensorOf = {2, 3, 7};
            for (int k = 0; k < bad.length; k++) {
                MemorySegment source = arena.allocate(total()).copyFrom(good);
                source.set(ValueLayout.JAVA_BYTE, bad[k], (byte) ~source.get(ValueLayout.JAVA_BYTE, bad[k]));
                MemorySegment dst = arena.allocate(total());
                try (Verifier.Overlapped check = verifier.overlapped(m, LOC, dst)) {
                    copyInChunks(check, source, dst);
                    ViperCorruptDataException e = assertThrows(ViperCorruptDataException.class, check::verify);
                    assertTrue(e.getMessage().contains("t" + tensorOf[k]), e.getMessage());
                }
            }
        }
    }

    @Test
    void sizesThatDifferAreRefused() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment source = random(arena, total());
            Verifier verifier = new Verifier("m", POOL, 1);
            try (Verifier.Overlapped check = verifier.overlapped(manifest(source), LOC, arena.allocate(total()))) {
                assertThrows(
                        IllegalArgumentException.class, () -> check.copy(source.asSlice(0, 10), arena.allocate(11), 0));
            }
        }
    }
}
