package io.viper.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Hashing a model in pieces as it arrives gives each tensor the hash of its bytes, whatever the order of arrival. */
class TensorHashesTest {
    private static final ExecutorService POOL = Executors.newFixedThreadPool(3);

    @AfterAll
    static void stop() {
        POOL.shutdownNow();
    }

    /** Tensors of these sizes, back to back: empty, tiny, a piece and a bit, several pieces. */
    private static List<TensorInfo> layout(long... sizes) {
        List<TensorInfo> out = new ArrayList<>();
        long off = 0;
        for (int i = 0; i < sizes.length; i++) {
            out.add(new TensorInfo("t" + i, DType.U8, new long[] {sizes[i]}, off, sizes[i]));
            off += sizes[i];
        }
        return out;
    }

    private static ContentHash[] sequential(List<TensorInfo> infos, HashAlgorithm a, MemorySegment data) {
        return infos.stream()
                .map(i -> a.hash(data.asSlice(i.offset(), i.length())))
                .toArray(ContentHash[]::new);
    }

    @ParameterizedTest
    @EnumSource(HashAlgorithm.class)
    void arrivalsInAnyOrderGiveTheHashesOfTheWholeTensors(HashAlgorithm a) {
        List<TensorInfo> infos =
                layout(0, 100, TensorHashes.PIECE + 17, 3 * TensorHashes.PIECE, 5000, TensorHashes.PIECE);
        long total = infos.getLast().offset() + infos.getLast().length();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(total);
            SplittableRandom rnd = new SplittableRandom(5);
            for (long i = 0; i + 8 <= total; i += 8) {
                data.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
            }
            ContentHash[] expected = sequential(infos, a, data);
            // Arrivals: ranges of odd sizes that straddle tensor and piece boundaries, shuffled.
            List<long[]> ranges = new ArrayList<>();
            for (long off = 0; off < total; ) {
                long n = Math.min(total - off, 1 + rnd.nextLong(3 * (1L << 20)));
                ranges.add(new long[] {off, n});
                off += n;
            }
            Collections.shuffle(ranges, new Random(9));
            for (int workers = 1; workers <= 3; workers++) {
                try (TensorHashes h =
                        new TensorHashes(infos, Collections.nCopies(infos.size(), a), data, POOL, workers)) {
                    ranges.forEach(r -> h.arrived(r[0], r[1]));
                    assertArrayEquals(expected, h.await());
                }
                // Nothing reported: await hashes everything (with the pool's help).
                try (TensorHashes h =
                        new TensorHashes(infos, Collections.nCopies(infos.size(), a), data, POOL, workers)) {
                    assertArrayEquals(expected, h.await());
                }
            }
        }
    }

    /**
     * With the pieces of an earlier version, a piece reported known entirely takes its earlier hash (it is not hashed:
     * the earlier version here has other bytes), and a piece with any byte reported arrived is hashed from the data.
     */
    @ParameterizedTest
    @EnumSource(HashAlgorithm.class)
    void knownPiecesTakeTheEarlierHashesArrivedOnesAreHashed(HashAlgorithm a) {
        List<TensorInfo> infos = layout(0, 100, TensorHashes.PIECE + 17, 3 * TensorHashes.PIECE, 5000);
        long total = infos.getLast().offset() + infos.getLast().length();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment earlier = arena.allocate(total);
            MemorySegment data = arena.allocate(total);
            SplittableRandom rnd = new SplittableRandom(11);
            for (long i = 0; i < total; i++) {
                earlier.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
                data.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            ContentHash[] before;
            try (TensorHashes h = new TensorHashes(infos, Collections.nCopies(infos.size(), a), earlier, POOL, 2)) {
                h.arrived(0, total);
                assertArrayEquals(sequential(infos, a, earlier), h.await());
                before = h.pieces();
            }
            // Everything known: the earlier hashes, although the bytes differ (nothing was hashed).
            try (TensorHashes h =
                    new TensorHashes(infos, Collections.nCopies(infos.size(), a), data, POOL, 2, before)) {
                h.known(0, total);
                assertArrayEquals(sequential(infos, a, earlier), h.await());
            }
            // One byte in the second piece of t3 reported arrived, the rest known: t3 is hashed, the others keep
            // theirs.
            long t3 = infos.get(3).offset();
            long changed = t3 + TensorHashes.PIECE + 5;
            try (TensorHashes h =
                    new TensorHashes(infos, Collections.nCopies(infos.size(), a), data, POOL, 2, before)) {
                h.known(0, changed);
                h.arrived(changed, 1);
                h.known(changed + 1, total - changed - 1);
                ContentHash[] got = h.await();
                ContentHash[] old = sequential(infos, a, earlier);
                for (int t = 0; t < infos.size(); t++) {
                    if (t == 3 && !a.combinable()) {
                        assertEquals(
                                a.hash(data.asSlice(t3, infos.get(3).length())),
                                got[t],
                                "xxh3_128 hashes the whole tensor again");
                    } else if (t != 3) {
                        assertEquals(old[t], got[t], "tensor " + t + " keeps its earlier hash");
                    }
                }
                if (a.combinable()) {
                    // Piece 1 of t3 is hashed from the data, pieces 0 and 2 keep the earlier hashes.
                    // (pieces in data order: t0, t1, t2's two, then t3's three at 4, 5, 6)
                    ContentHash expected = a.combine(
                            a.combine(
                                    before[4],
                                    a.hash(data.asSlice(t3 + TensorHashes.PIECE, TensorHashes.PIECE)),
                                    TensorHashes.PIECE),
                            before[6],
                            TensorHashes.PIECE);
                    assertEquals(expected, got[3]);
                }
            }
        }
    }

    @Test
    void smallModelsAreHashedByTheWaitingThreadAlone() throws Exception {
        AtomicInteger tasks = new AtomicInteger();
        ExecutorService counting = Executors.newSingleThreadExecutor(r -> new Thread(() -> {
            tasks.incrementAndGet();
            r.run();
        }));
        List<TensorInfo> infos = layout(16_384, 4096);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocate(20_480);
            try (TensorHashes h =
                    new TensorHashes(infos, List.of(HashAlgorithm.CRC32C, HashAlgorithm.CRC32C), data, counting, 2)) {
                h.arrived(0, 20_480);
                assertArrayEquals(sequential(infos, HashAlgorithm.CRC32C, data), h.await());
            }
        } finally {
            counting.shutdown();
            assertTrue(counting.awaitTermination(5, TimeUnit.SECONDS));
        }
        assertEquals(0, tasks.get(), "no thread was started for 20 KB");
    }

    @Test
    void closeWithoutAwaitWaitsForStartedPiecesAndSkipsTheRest() {
        List<TensorInfo> infos = layout(8 * TensorHashes.PIECE);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment data = arena.allocate(8 * TensorHashes.PIECE);
            TensorHashes h = new TensorHashes(infos, List.of(HashAlgorithm.CRC32C), data, POOL, 2);
            h.arrived(0, 3 * TensorHashes.PIECE);
            h.close(); // returns only when no task reads the memory any more: the arena closes next
        }
    }
}
