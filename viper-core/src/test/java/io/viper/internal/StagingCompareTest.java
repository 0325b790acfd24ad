package io.viper.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.Snapshot;
import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.manifest.BlockList;
import io.viper.spi.DeviceBuffer;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import io.viper.testing.FakeGpuProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Staging that compares a snapshot with what a recycled buffer holds produces exactly what staging
 * from scratch would: the buffer holds the snapshot's bytes, every tensor hash and block id is the
 * hash of those bytes, whatever changed, whatever the layout, block size or algorithm, and after a
 * staging that failed half way.
 */
class StagingCompareTest {
    private static final long MIB = 1L << 20;
    private static final ExecutorService POOL = Executors.newFixedThreadPool(2);
    private static final ValueLayout.OfFloat LE_FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @AfterAll
    static void stop() {
        POOL.shutdownNow();
    }

    /** One tensor of a test snapshot: bytes in a segment, or floats. */
    private record Part(String name, MemorySegment bytes, float[] floats) {
        long length() {
            return bytes != null ? bytes.byteSize() : 4L * floats.length;
        }

        /** The bytes staging must hold for it. */
        MemorySegment content(Arena arena) {
            if (bytes != null) {
                return bytes;
            }
            MemorySegment s = arena.allocate(length());
            for (int i = 0; i < floats.length; i++) {
                s.set(LE_FLOAT, 4L * i, floats[i]);
            }
            return s;
        }
    }

    private static Snapshot snapshot(List<Part> parts) {
        return sink -> {
            for (Part p : parts) {
                if (p.bytes() != null) {
                    sink.add(p.name(), DType.U8, new long[] {p.bytes().byteSize()}, p.bytes());
                } else {
                    sink.addFloats(p.name(), new long[] {p.floats().length}, p.floats());
                }
            }
        };
    }

    /** A producer's staging without transports: a version is staged, hashed, then serves (the one before it retires at once). */
    private static final class Staging implements AutoCloseable {
        /** The staging budget: a snapshot larger than this is refused after it was described. */
        static final long BUDGET = 1L << 30;
        final StagingCache cache = new StagingCache("m", BUDGET, 1, 5_000, StagingBuffer::retireHandled, null);
        final Stager stager;
        final HashAlgorithm algorithm;
        final long blockBytes;
        final boolean skipUnshared;
        long version;
        /** Whether the version published last carries block ids. */
        boolean lastWithIds;

        Staging(HashAlgorithm algorithm, long blockBytes, boolean compare) {
            this(algorithm, blockBytes, compare, false);
        }

        Staging(HashAlgorithm algorithm, long blockBytes, boolean compare, boolean skipUnshared) {
            this(algorithm, blockBytes, compare, skipUnshared, CopyHelpers.NONE);
        }

        Staging(HashAlgorithm algorithm, long blockBytes, boolean compare, boolean skipUnshared, CopyHelpers helpers) {
            this.algorithm = algorithm;
            this.blockBytes = blockBytes;
            this.skipUnshared = skipUnshared;
            this.stager = new Stager(cache, POOL, 2, algorithm, blockBytes, compare, skipUnshared, new GpuStaging("m"), helpers);
        }

        /** Stages {@code parts} as the next version, as the pipeline would; returns what it copied and found unchanged. */
        StagingCopy.Copied publish(List<Part> parts, Arena arena) {
            return publish(snapshot(parts), parts, arena);
        }

        /** Stages {@code snapshot}, whose tensors hold the bytes of {@code parts}. */
        StagingCopy.Copied publish(Snapshot snapshot, List<Part> parts, Arena arena) {
            Stager.Staged staged = stager.stage(snapshot, ++version);
            staged.hostCopy().run();
            try (TensorHashes hashes = staged.hashes(); BlockIds blocks = staged.blocks()) {
                ContentHash[] tensorHashes = hashes.await();
                List<BlockList> blockIds = blocks.await();
                lastWithIds = blockBytes > 0 && !blockIds.stream().allMatch(b -> b == BlockList.NONE);
                if (blockBytes > 0 && !lastWithIds) {
                    assertTrue(skipUnshared, "v" + version + " went without block ids although none may be skipped");
                    assertEquals(0, staged.copied().unchangedBytes(), "v" + version + " went without block ids although it shares bytes");
                }
                assertStagedFromScratch(parts, staged, tensorHashes, blockIds, arena);
                cache.withdraw(cache.activate(staged.buffer(), staged.content()));
            }
            return staged.copied();
        }

        /** The buffer holds the parts' bytes, and every hash and block id is that of those bytes. */
        void assertStagedFromScratch(List<Part> parts, Stager.Staged staged, ContentHash[] tensorHashes, List<BlockList> blockIds, Arena arena) {
            MemorySegment data = staged.buffer().data();
            for (int i = 0; i < parts.size(); i++) {
                TensorInfo info = staged.infos().get(i);
                MemorySegment expected = parts.get(i).content(arena);
                String what = "v" + version + " tensor " + info.name();
                assertEquals(-1, expected.mismatch(data.asSlice(info.offset(), info.length())), what + ": the buffer holds the snapshot's bytes");
                assertEquals(algorithm.hash(expected), tensorHashes[i], what + ": its hash");
                if (blockBytes > 0 && !lastWithIds) {
                    continue; // a version that shared nothing: no ids to check
                }
                List<ContentHash> ids = new ArrayList<>();
                for (long start = 0; blockBytes > 0 && start < info.length(); start += blockBytes) {
                    ids.add(BlockList.ID_ALGORITHM.hash(expected.asSlice(start, Math.min(blockBytes, info.length() - start))));
                }
                assertEquals(ids, blockIds.get(i).ids(), what + ": its block ids");
            }
        }

        @Override
        public void close() {
            cache.close();
        }
    }

    private static MemorySegment randomBytes(Arena arena, long n, SplittableRandom rnd) {
        MemorySegment s = arena.allocate(Math.max(1, n)).asSlice(0, n);
        for (long i = 0; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return s;
    }

    /** Tensors of random sizes: up to 3 MiB and a bit (tails shorter than a block), some empty, some floats. */
    private static List<Part> randomLayout(Arena arena, SplittableRandom rnd) {
        List<Part> parts = new ArrayList<>();
        int n = 1 + rnd.nextInt(5);
        for (int i = 0; i < n; i++) {
            long len = switch (rnd.nextInt(4)) {
                case 0 -> rnd.nextInt(3) * MIB;
                case 1 -> rnd.nextLong(4096);
                default -> rnd.nextLong(3 * MIB + 5000);
            };
            if (rnd.nextInt(4) == 0) {
                float[] f = new float[(int) (len / 4)];
                for (int k = 0; k < f.length; k++) {
                    f[k] = (float) rnd.nextGaussian();
                }
                parts.add(new Part("f" + i, null, f));
            } else {
                parts.add(new Part("t" + i, randomBytes(arena, len, rnd), null));
            }
        }
        return parts;
    }

    /** The same layout with fresh memory: a few bytes changed at random places (or none), sometimes all of one tensor. */
    private static List<Part> changed(List<Part> parts, Arena arena, SplittableRandom rnd) {
        List<Part> out = new ArrayList<>();
        for (Part p : parts) {
            if (p.bytes() != null) {
                MemorySegment s = arena.allocate(Math.max(1, p.length())).asSlice(0, p.length()).copyFrom(p.bytes());
                if (rnd.nextInt(5) == 0) {
                    s.copyFrom(randomBytes(arena, p.length(), rnd));
                } else {
                    for (int k = rnd.nextInt(3); k > 0 && p.length() > 0; k--) {
                        long at = rnd.nextLong(p.length());
                        s.set(ValueLayout.JAVA_BYTE, at, (byte) ~s.get(ValueLayout.JAVA_BYTE, at));
                    }
                }
                out.add(new Part(p.name(), s, null));
            } else {
                float[] f = p.floats().clone();
                if (f.length > 0 && rnd.nextBoolean()) {
                    f[rnd.nextInt(f.length)] += 1;
                }
                out.add(new Part(p.name(), null, f));
            }
        }
        return out;
    }

    @ParameterizedTest(name = "{0}, blocks of {1} bytes")
    @CsvSource({
        "CRC32C, 1048576",   // the default: block = piece
        "CRC32C, 262144",    // blocks divide the piece
        "CRC32C, 4194304",   // blocks are a multiple of the piece
        "CRC32C, 4096",      // the smallest blocks
        "CRC32C, 0",         // no blocks
        "CRC32C, 1572864",   // neither: everything is copied
        "XXH3_128, 1048576", // not combinable: a tensor keeps its hash only when all of it is unchanged
        "XXH3_128, 0",
    })
    void randomChangesAndLayoutsStageExactlyWhatStagingFromScratchWould(HashAlgorithm algorithm, long blockBytes) {
        stageRandomChanges(algorithm, blockBytes, CopyHelpers.NONE);
    }

    /**
     * The same with the copy and the compare shared with pool threads in pieces of 1 MiB (tensors of up to
     * 3 MiB: several pieces each), so that pieces of one tensor, and runs that would cross a piece, end on
     * different threads.
     */
    @ParameterizedTest(name = "{0}, blocks of {1} bytes, copy shared")
    @CsvSource({"CRC32C, 1048576", "CRC32C, 262144", "CRC32C, 4194304", "CRC32C, 0", "CRC32C, 1572864", "XXH3_128, 1048576"})
    void randomChangesStagedWithHelpersStageExactlyWhatStagingFromScratchWould(HashAlgorithm algorithm, long blockBytes) {
        stageRandomChanges(algorithm, blockBytes, new CopyHelpers(POOL, 2, 0, MIB));
    }

    @SuppressWarnings("EnumOrdinal") // a fixed seed per algorithm, so a failure replays
    private static void stageRandomChanges(HashAlgorithm algorithm, long blockBytes, CopyHelpers helpers) {
        SplittableRandom rnd = new SplittableRandom(blockBytes * 31 + algorithm.ordinal());
        long unchanged = 0;
        // Versions that share nothing with their buffer's go without ids (checked by publish); the others have every id.
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(algorithm, blockBytes, true, true, helpers)) {
            List<Part> parts = randomLayout(arena, rnd);
            for (int round = 0; round < 24; round++) {
                if (rnd.nextInt(6) == 0) {
                    parts = randomLayout(arena, rnd); // another layout: nothing to compare with
                } else {
                    parts = changed(parts, arena, rnd);
                }
                StagingCopy.Copied copied = staging.publish(parts, arena);
                long total = parts.stream().mapToLong(Part::length).sum();
                assertEquals(total, copied.copiedBytes() + copied.unchangedBytes(), "every byte is copied or found unchanged");
                unchanged += copied.unchangedBytes();
            }
        }
        assertEquals(StagingCopy.compareUnit(blockBytes) == 0, unchanged == 0,
                "bytes are found unchanged exactly where blocks and pieces share a unit");
    }

    /**
     * viper.producer.block.skip.unshared: a version whose every compared unit differs from what its
     * buffer held goes without block ids; the next one that shares bytes has every id, hashed from
     * scratch where its buffer's version had none, and a version that shares one unit has them all.
     */
    @Test
    void aVersionThatSharesNothingWithItsBufferGoesWithoutBlockIdsAndTheNextThatSharesHasThemAll() {
        SplittableRandom rnd = new SplittableRandom(7);
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true, true)) {
            List<Part> v1 = List.of(new Part("a", randomBytes(arena, 3 * MIB + 5, rnd), null), new Part("b", randomBytes(arena, 2 * MIB, rnd), null));
            staging.publish(v1, arena);
            assertTrue(staging.lastWithIds, "v1: nothing to compare with, ids");
            List<Part> v2 = List.of(new Part("a", randomBytes(arena, 3 * MIB + 5, rnd), null), new Part("b", randomBytes(arena, 2 * MIB, rnd), null));
            staging.publish(v2, arena);
            assertTrue(staging.lastWithIds, "v2: a new buffer, nothing to compare with, ids");
            List<Part> v3 = List.of(new Part("a", randomBytes(arena, 3 * MIB + 5, rnd), null), new Part("b", randomBytes(arena, 2 * MIB, rnd), null));
            assertEquals(0, staging.publish(v3, arena).unchangedBytes());
            assertFalse(staging.lastWithIds, "v3 shares nothing with v1, whose buffer it took");
            List<Part> v4 = changed(v3, arena, rnd);
            staging.publish(v4, arena);
            assertFalse(staging.lastWithIds, "v4 shares nothing with v2, whose buffer it took");
            // v5 takes v3's buffer, which has no ids: every block of v5 is hashed (checked against its bytes by publish).
            StagingCopy.Copied copied = staging.publish(v4, arena);
            assertTrue(copied.unchangedBytes() > 0, "v5 shares bytes with v3: " + copied);
            assertTrue(staging.lastWithIds, "v5 shares bytes with v3, ids");
            // v6 (into v4's buffer) changes all of a and none of b: it shares b's units, so it keeps every id.
            List<Part> v6 = List.of(new Part("a", randomBytes(arena, 3 * MIB + 5, rnd), null), v4.get(1));
            assertEquals(2 * MIB, staging.publish(v6, arena).unchangedBytes());
            assertTrue(staging.lastWithIds, "v6 shares b with v4, ids");
        }
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true, false)) {
            for (int v = 1; v <= 4; v++) {
                staging.publish(List.of(new Part("a", randomBytes(arena, 2 * MIB + 1, rnd), null)), arena);
                assertTrue(staging.lastWithIds, "v" + v + ": with the key off, every version has ids");
            }
        }
    }

    @Test
    void withCompareOffEveryByteIsCopied() {
        SplittableRandom rnd = new SplittableRandom(3);
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, false)) {
            List<Part> parts = randomLayout(arena, rnd);
            for (int round = 0; round < 4; round++) {
                assertEquals(0, staging.publish(parts, arena).unchangedBytes());
            }
        }
    }

    @Test
    void aBufferComparedWithCopiesOnlyTheChangedBlocks() {
        SplittableRandom rnd = new SplittableRandom(4);
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            List<Part> v1 = List.of(new Part("a", randomBytes(arena, 8 * MIB, rnd), null), new Part("b", randomBytes(arena, MIB + 3, rnd), null));
            assertEquals(0, staging.publish(v1, arena).unchangedBytes(), "v1: a new buffer");
            assertEquals(0, staging.publish(v1, arena).unchangedBytes(), "v2: another new buffer (v1 still served when it was taken)");
            // v3 goes into v1's buffer: block 5 of a and the tail of b changed and are copied, the rest is not.
            MemorySegment a = arena.allocate(8 * MIB).copyFrom(v1.get(0).bytes());
            MemorySegment b = arena.allocate(MIB + 3).copyFrom(v1.get(1).bytes());
            a.set(ValueLayout.JAVA_BYTE, 5 * MIB + 1, (byte) ~a.get(ValueLayout.JAVA_BYTE, 5 * MIB + 1));
            b.set(ValueLayout.JAVA_BYTE, MIB + 2, (byte) ~b.get(ValueLayout.JAVA_BYTE, MIB + 2));
            List<Part> v3 = List.of(new Part("a", a, null), new Part("b", b, null));
            StagingCopy.Copied copied = staging.publish(v3, arena);
            assertEquals(MIB + 3, copied.copiedBytes());
            assertEquals(8 * MIB, copied.unchangedBytes());
        }
    }

    /**
     * A snapshot in a confined arena may be read by the training thread only: with helpers configured
     * it is still copied and compared, by that thread alone, and what it copies is the same.
     */
    @Test
    void aConfinedSnapshotIsCopiedByTheTrainingThreadAlone() {
        SplittableRandom rnd = new SplittableRandom(5);
        try (Arena shared = Arena.ofShared(); Arena confined = Arena.ofConfined();
             Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true, false, new CopyHelpers(POOL, 2, 0, MIB))) {
            MemorySegment a = confined.allocate(6 * MIB).copyFrom(randomBytes(shared, 6 * MIB, rnd));
            List<Part> v1 = List.of(new Part("a", a, null));
            for (int v = 1; v <= 3; v++) {
                a.set(ValueLayout.JAVA_BYTE, v * MIB, (byte) ~a.get(ValueLayout.JAVA_BYTE, v * MIB));
                StagingCopy.Copied copied = staging.publish(v1, shared);
                assertEquals(6 * MIB, copied.copiedBytes() + copied.unchangedBytes());
            }
        }
    }

    /** A snapshot of GPU tensors is copied whole; the host staging it leaves is compared with like any other. */
    @Test
    void aGpuSnapshotIsCopiedWholeAndWhatItLeavesIsComparedWith() {
        SplittableRandom rnd = new SplittableRandom(6);
        FakeGpuProvider.enable(1L << 30);
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            List<Part> v1 = List.of(new Part("a", randomBytes(arena, 3 * MIB + 10, rnd), null), new Part("b", randomBytes(arena, MIB, rnd), null));
            staging.publish(v1, arena);
            staging.publish(v1, arena);
            List<Part> v3 = changed(v1, arena, rnd);
            List<DeviceBuffer> onGpu = v3.stream().map(p -> {
                DeviceBuffer d = new FakeGpuProvider().allocate(0, p.length());
                FakeGpuProvider.at(d.devicePointer(), p.length()).copyFrom(p.bytes());
                return d;
            }).toList();
            try {
                Snapshot gpu = sink -> {
                    for (int i = 0; i < v3.size(); i++) {
                        sink.addDevice(v3.get(i).name(), DType.U8, new long[] {v3.get(i).length()}, onGpu.get(i).devicePointer(), 0);
                    }
                };
                assertEquals(0, staging.publish(gpu, v3, arena).unchangedBytes(), "v3 (GPU) into v1's buffer: copied whole");
            } finally {
                onGpu.forEach(DeviceBuffer::close);
            }
            staging.publish(v3, arena);
            assertEquals(4 * MIB + 10, staging.publish(v3, arena).unchangedBytes(), "v5 into v3's buffer: nothing changed since");
        } finally {
            FakeGpuProvider.disable();
        }
    }

    /**
     * The copy has the memory to itself: nothing it copied is handed to the hash pool before it
     * ended. A copy that fails at its last tensor has handed nothing over, although 6 MiB were in.
     */
    @Test
    void nothingIsHashedBeforeTheCopyEnded() throws Exception {
        SplittableRandom rnd = new SplittableRandom(8);
        AtomicInteger submitted = new AtomicInteger();
        ExecutorService counting = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS,
                new LinkedBlockingQueue<>()) {
            @Override
            public void execute(Runnable task) {
                submitted.incrementAndGet();
                super.execute(task);
            }
        };
        try (Arena arena = Arena.ofShared();
             StagingCache cache = new StagingCache("m", 1L << 30, 1, 5_000, StagingBuffer::retireHandled, null)) {
            Stager stager = new Stager(cache, counting, 1, HashAlgorithm.CRC32C, MIB, true, true, new GpuStaging("m"), CopyHelpers.NONE);
            MemorySegment gone;
            try (Arena closed = Arena.ofConfined()) {
                gone = closed.allocate(2 * MIB);
            }
            List<Part> failing = List.of(new Part("a", randomBytes(arena, 4 * MIB, rnd), null), new Part("b", randomBytes(arena, 2 * MIB, rnd), null),
                    new Part("c", gone, null));
            assertThrows(IllegalStateException.class, () -> stager.stage(snapshot(failing), 1));
            assertEquals(0, submitted.get(), "pieces were handed to the hash pool while the copy went on");
            Stager.Staged staged = stager.stage(snapshot(failing.subList(0, 2)), 2);
            try (TensorHashes hashes = staged.hashes(); BlockIds blocks = staged.blocks()) {
                assertTrue(submitted.get() > 0, "a copy that ended hands its pieces to the pool");
                assertEquals(HashAlgorithm.CRC32C.hash(failing.get(0).bytes()), hashes.await()[0]);
                blocks.await();
            }
            cache.abandon(staged.buffer());
        } finally {
            counting.shutdownNow();
        }
    }

    /**
     * A staging that fails half way (its second tensor's memory is gone) leaves its buffer with new
     * bytes in the first tensor: the buffer must not be compared with as if it still held what it held.
     */
    @Test
    void aStagingThatFailsHalfWayLeavesNothingToCompareWith() {
        SplittableRandom rnd = new SplittableRandom(5);
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            List<Part> v1 = List.of(new Part("a", randomBytes(arena, 4 * MIB, rnd), null), new Part("b", randomBytes(arena, 2 * MIB, rnd), null));
            staging.publish(v1, arena);
            staging.publish(v1, arena);
            MemorySegment a2 = arena.allocate(4 * MIB).copyFrom(randomBytes(arena, 4 * MIB, rnd));
            MemorySegment gone;
            try (Arena closed = Arena.ofConfined()) {
                gone = closed.allocate(2 * MIB);
            }
            List<Part> failing = List.of(new Part("a", a2, null), new Part("b", gone, null));
            assertThrows(IllegalStateException.class, () -> staging.stager.stage(snapshot(failing), ++staging.version));
            // The same first tensor again, now with a good second one: every hash is that of these bytes.
            List<Part> good = List.of(new Part("a", a2, null), new Part("b", v1.get(1).bytes(), null));
            StagingCopy.Copied copied = staging.publish(good, arena);
            assertTrue(copied.copiedBytes() >= 4 * MIB, "a's new bytes were copied: " + copied);
            staging.publish(good, arena);
            assertEquals(6 * MIB, staging.publish(good, arena).unchangedBytes(), "an unchanged snapshot is found unchanged");
        }
    }

    /** A snapshot of {@code parts}, each tensor (all in segments) declaring {@code changes.get(i)}. */
    private static Snapshot declaring(List<Part> parts, List<Snapshot.Changes> changes) {
        return sink -> {
            for (int i = 0; i < parts.size(); i++) {
                Part p = parts.get(i);
                sink.add(p.name(), DType.U8, new long[] {p.length()}, p.bytes(), changes.get(i));
            }
        };
    }

    /** A copy of {@code bytes} with the byte at {@code at} flipped. */
    private static MemorySegment flipped(Arena arena, MemorySegment bytes, long at) {
        MemorySegment s = arena.allocate(bytes.byteSize()).copyFrom(bytes);
        s.set(ValueLayout.JAVA_BYTE, at, (byte) ~s.get(ValueLayout.JAVA_BYTE, at));
        return s;
    }

    /**
     * Where the training code declares what changed, staging into a buffer that holds an older
     * version copies the union of what every version since declared, and the result is what staging
     * from scratch gives: v3 goes into v1's buffer, and v2's change must be copied as well as v3's.
     */
    @Test
    void declaredChangesSinceTheBuffersVersionAreCopiedAndNothingElse() {
        SplittableRandom rnd = new SplittableRandom(6);
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            MemorySegment a1 = randomBytes(arena, 8 * MIB, rnd);
            MemorySegment b1 = randomBytes(arena, MIB + 3, rnd);
            List<Part> v1 = List.of(new Part("a", a1, null), new Part("b", b1, null));
            staging.publish(declaring(v1, List.of(Snapshot.Changes.none(), Snapshot.Changes.none())), v1, arena);
            MemorySegment a2 = flipped(arena, a1, 2 * MIB + 10);
            List<Part> v2 = List.of(new Part("a", a2, null), new Part("b", b1, null));
            assertEquals(0, staging.publish(declaring(v2, List.of(Snapshot.Changes.range(2 * MIB + 10, 1), Snapshot.Changes.none())), v2, arena)
                    .unchangedBytes(), "v2: a new buffer");
            MemorySegment a3 = flipped(arena, a2, 5 * MIB + 7);
            MemorySegment b3 = flipped(arena, b1, MIB + 1);
            List<Part> v3 = List.of(new Part("a", a3, null), new Part("b", b3, null));
            StagingCopy.Copied copied = staging.publish(declaring(v3, List.of(Snapshot.Changes.range(5 * MIB, 8), Snapshot.Changes.range(MIB, 3))),
                    v3, arena);
            assertEquals(2 * MIB + 3, copied.copiedBytes(), "blocks 2 (v2's) and 5 (v3's) of a, and b's tail: " + copied);
            assertEquals(7 * MIB, copied.unchangedBytes());
        }
    }

    /**
     * A unit copied into an older buffer for an earlier version's change, and untouched since the
     * newest version, takes the newest version's hashes: only what changed since it is hashed. Shown
     * with a byte changed there without a declaration: it is copied (the unit had to be) but not
     * hashed, so the tensor's hash is that of the bytes the declarations describe. Consumers check
     * every tensor before a swap and would refuse such a version; a declared one hashes as from scratch
     * ({@link #declaredChangesSinceTheBuffersVersionAreCopiedAndNothingElse}).
     */
    @Test
    void aUnitCopiedForAnEarlierChangeTakesTheNewestVersionsHashes() {
        SplittableRandom rnd = new SplittableRandom(9);
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            MemorySegment a1 = randomBytes(arena, 4 * MIB, rnd);
            List<Part> v1 = List.of(new Part("a", a1, null));
            staging.publish(declaring(v1, List.of(Snapshot.Changes.none())), v1, arena);
            MemorySegment a2 = flipped(arena, a1, MIB + 10);
            List<Part> v2 = List.of(new Part("a", a2, null));
            staging.publish(declaring(v2, List.of(Snapshot.Changes.range(MIB + 10, 1))), v2, arena);
            // v3 goes into v1's buffer: unit 1 is copied for v2's change; v3 declares unit 3 only, and also changed unit 1
            MemorySegment declared = flipped(arena, a2, 3 * MIB);
            MemorySegment actual = flipped(arena, declared, MIB + 20);
            Stager.Staged staged = staging.stager.stage(declaring(List.of(new Part("a", actual, null)), List.of(Snapshot.Changes.range(3 * MIB, 1))), 3);
            try (TensorHashes hashes = staged.hashes(); BlockIds blocks = staged.blocks()) {
                ContentHash[] tensorHashes = hashes.await();
                List<BlockList> ids = blocks.await();
                assertEquals(2 * MIB, staged.copied().copiedBytes(), "units 1 (v2's change) and 3 (v3's)");
                assertEquals(-1, actual.mismatch(staged.buffer().data().asSlice(0, 4 * MIB)), "unit 1 was copied, undeclared byte and all");
                assertEquals(HashAlgorithm.CRC32C.hash(declared), tensorHashes[0], "unit 1's hash is v2's: not hashed again");
                assertEquals(BlockList.ID_ALGORITHM.hash(a2.asSlice(MIB, MIB)), ids.getFirst().ids().get(1), "so is its block id");
                assertEquals(BlockList.ID_ALGORITHM.hash(declared.asSlice(3 * MIB, MIB)), ids.getFirst().ids().get(3), "unit 3 was hashed");
            }
            staging.cache.abandon(staged.buffer());
        }
    }

    /**
     * The declaration is taken at its word: a byte changed outside it is not read, so the version
     * keeps the buffer's byte, and every hash and block id is that of what the buffer holds.
     */
    @Test
    void aByteChangedOutsideTheDeclaredRangesIsNotRead() {
        SplittableRandom rnd = new SplittableRandom(7);
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            MemorySegment a1 = randomBytes(arena, 4 * MIB, rnd);
            List<Part> v1 = List.of(new Part("a", a1, null));
            staging.publish(declaring(v1, List.of(Snapshot.Changes.none())), v1, arena);
            staging.publish(declaring(v1, List.of(Snapshot.Changes.none())), v1, arena);
            MemorySegment a3 = flipped(arena, flipped(arena, a1, 3 * MIB + 5), 1);
            Snapshot onlyTheFirstByte = declaring(List.of(new Part("a", a3, null)), List.of(Snapshot.Changes.range(1, 1)));
            // What the buffer must hold: v1 with the declared byte changed, not the undeclared one.
            List<Part> published = List.of(new Part("a", flipped(arena, a1, 1), null));
            StagingCopy.Copied copied = staging.publish(onlyTheFirstByte, published, arena);
            assertEquals(MIB, copied.copiedBytes(), "the declared unit only");
        }
    }

    /**
     * Without a declaration from every tensor, or after a staging that failed (the training code's
     * record was handed over and lost), the snapshot is compared as usual.
     */
    @Test
    void anUndeclaredTensorOrAFailedStagingMeansACompare() {
        SplittableRandom rnd = new SplittableRandom(8);
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            MemorySegment a1 = randomBytes(arena, 4 * MIB, rnd);
            MemorySegment b1 = randomBytes(arena, 2 * MIB, rnd);
            List<Part> v1 = List.of(new Part("a", a1, null), new Part("b", b1, null));
            List<Snapshot.Changes> nothing = List.of(Snapshot.Changes.none(), Snapshot.Changes.none());
            staging.publish(declaring(v1, nothing), v1, arena);
            staging.publish(declaring(v1, nothing), v1, arena);
            // b changed and is not declared; a is declared unchanged: compared, b's change is found and copied.
            List<Part> v3 = List.of(new Part("a", a1, null), new Part("b", flipped(arena, b1, 5), null));
            Snapshot partly = sink -> {
                sink.add("a", DType.U8, new long[] {4 * MIB}, a1, Snapshot.Changes.none());
                sink.add("b", DType.U8, new long[] {2 * MIB}, v3.get(1).bytes());
            };
            assertEquals(MIB, staging.publish(partly, v3, arena).copiedBytes(), "compared: b's changed unit found");
            staging.publish(declaring(v3, nothing), v3, arena);

            // Described, then refused (a bad range in its second tensor): not staged.
            Snapshot failing = sink -> {
                sink.add("a", DType.U8, new long[] {4 * MIB}, a1, Snapshot.Changes.none());
                sink.add("b", DType.U8, new long[] {2 * MIB}, b1, Snapshot.Changes.range(0, 3 * MIB));
            };
            assertThrows(io.viper.errors.ViperConfigException.class, () -> staging.stager.stage(failing, ++staging.version));
            // Said relative to the failed snapshot, which was not staged: the producer compares instead of trusting it.
            MemorySegment a6 = flipped(arena, a1, MIB + 1);
            List<Part> v6 = List.of(new Part("a", a6, null), new Part("b", v3.get(1).bytes(), null));
            StagingCopy.Copied copied = staging.publish(declaring(v6, nothing), v6, arena);
            assertTrue(copied.copiedBytes() >= MIB, "a's change was found by comparing: " + copied);
            staging.publish(declaring(v6, nothing), v6, arena);

            // Described whole, then refused by the staging (larger than its budget): its changes are lost too.
            MemorySegment a8 = flipped(arena, a6, 2 * MIB + 3);
            MemorySegment tooLarge = MemorySegment.ofAddress(0).reinterpret(Staging.BUDGET);
            Snapshot refused = sink -> {
                sink.add("a", DType.U8, new long[] {4 * MIB}, a8, Snapshot.Changes.range(2 * MIB + 3, 1));
                sink.add("b", DType.U8, new long[] {2 * MIB}, v3.get(1).bytes(), Snapshot.Changes.none());
                sink.add("c", DType.U8, new long[] {Staging.BUDGET}, tooLarge, Snapshot.Changes.none());
            };
            assertThrows(io.viper.errors.ViperConfigException.class, () -> staging.stager.stage(refused, ++staging.version));
            List<Part> after = List.of(new Part("a", a8, null), new Part("b", v3.get(1).bytes(), null));
            assertTrue(staging.publish(declaring(after, nothing), after, arena).copiedBytes() >= MIB,
                    "a's change, declared by the refused snapshot, was found by comparing");
        }
    }

    @Test
    void aDeclaredRangePastTheTensorIsRefusedNamingIt() {
        try (Arena arena = Arena.ofShared(); Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            MemorySegment a = arena.allocate(100);
            Snapshot bad = sink -> sink.add("w", DType.U8, new long[] {100}, a, Snapshot.Changes.range(90, 20));
            io.viper.errors.ViperConfigException e = assertThrows(io.viper.errors.ViperConfigException.class, () -> staging.stager.stage(bad, 1));
            assertEquals("tensor w: changed range [90, 110) ends past its 100 bytes", e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> Snapshot.Changes.range(-1, 2));
        }
    }

    @Test
    void declaredRangesMergeAndTellWhichUnitsTheyTouch() {
        long[] merged = DeclaredChanges.merge(new long[] {10, 20, 0, 5, 15, 30, 40, 40, 50, 60});
        assertEquals(List.of(0L, 5L, 10L, 30L, 50L, 60L), Arrays.stream(merged).boxed().toList());
        assertTrue(DeclaredChanges.touches(merged, 0, 1));
        assertFalse(DeclaredChanges.touches(merged, 5, 10), "between two ranges");
        assertTrue(DeclaredChanges.touches(merged, 29, 31));
        assertFalse(DeclaredChanges.touches(merged, 30, 50), "ends are exclusive");
        assertFalse(DeclaredChanges.touches(merged, 60, 100));
        assertFalse(DeclaredChanges.touches(new long[0], 0, 100));
    }
}
