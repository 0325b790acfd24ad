package io.viper.internal.producer;

import static io.viper.internal.producer.StagingFixture.MIB;
import static io.viper.internal.producer.StagingFixture.POOL;
import static io.viper.internal.producer.StagingFixture.changed;
import static io.viper.internal.producer.StagingFixture.randomBytes;
import static io.viper.internal.producer.StagingFixture.randomLayout;
import static io.viper.internal.producer.StagingFixture.snapshot;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.Snapshot;
import io.viper.hash.HashAlgorithm;
import io.viper.internal.CopyHelpers;
import io.viper.internal.TensorHashes;
import io.viper.internal.producer.StagingFixture.Part;
import io.viper.internal.producer.StagingFixture.Staging;
import io.viper.spi.DeviceBuffer;
import io.viper.tensor.DType;
import io.viper.testing.FakeGpuProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Staging that compares a snapshot with what a recycled buffer holds produces exactly what staging from scratch would:
 * the buffer holds the snapshot's bytes, every tensor hash and block id is the hash of those bytes, whatever changed,
 * whatever the layout, block size or algorithm, and after a staging that failed half way. Changes the training code
 * declares: {@link DeclaredChangesStagingTest}.
 */
class StagingCompareTest {

    @ParameterizedTest(name = "{0}, blocks of {1} bytes")
    @CsvSource({
        "CRC32C, 1048576", // the default: block = piece
        "CRC32C, 262144", // blocks divide the piece
        "CRC32C, 4194304", // blocks are a multiple of the piece
        "CRC32C, 4096", // the smallest blocks
        "CRC32C, 0", // no blocks
        "CRC32C, 1572864", // neither: everything is copied
        "XXH3_128, 1048576", // not combinable: a tensor keeps its hash only when all of it is unchanged
        "XXH3_128, 0",
    })
    void randomChangesAndLayoutsStageExactlyWhatStagingFromScratchWould(HashAlgorithm algorithm, long blockBytes) {
        stageRandomChanges(algorithm, blockBytes, CopyHelpers.NONE);
    }

    /**
     * The same with the copy and the compare shared with pool threads in pieces of 1 MiB (tensors of up to 3 MiB:
     * several pieces each), so that pieces of one tensor, and runs that would cross a piece, end on different threads.
     */
    @ParameterizedTest(name = "{0}, blocks of {1} bytes, copy shared")
    @CsvSource({
        "CRC32C, 1048576",
        "CRC32C, 262144",
        "CRC32C, 4194304",
        "CRC32C, 0",
        "CRC32C, 1572864",
        "XXH3_128, 1048576"
    })
    void randomChangesStagedWithHelpersStageExactlyWhatStagingFromScratchWould(
            HashAlgorithm algorithm, long blockBytes) {
        stageRandomChanges(algorithm, blockBytes, new CopyHelpers(POOL, 2, 0, MIB));
    }

    @SuppressWarnings("EnumOrdinal") // a fixed seed per algorithm, so a failure replays
    private static void stageRandomChanges(HashAlgorithm algorithm, long blockBytes, CopyHelpers helpers) {
        SplittableRandom rnd = new SplittableRandom(blockBytes * 31 + algorithm.ordinal());
        long unchanged = 0;
        // Versions that share nothing with their buffer's go without ids (checked by publish); the others have every
        // id.
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(algorithm, blockBytes, true, true, helpers)) {
            List<Part> parts = randomLayout(arena, rnd);
            for (int round = 0; round < 24; round++) {
                if (rnd.nextInt(6) == 0) {
                    parts = randomLayout(arena, rnd); // another layout: nothing to compare with
                } else {
                    parts = changed(parts, arena, rnd);
                }
                StagingCopy.Copied copied = staging.publish(parts, arena);
                long total = parts.stream().mapToLong(Part::length).sum();
                assertEquals(
                        total,
                        copied.copiedBytes() + copied.unchangedBytes(),
                        "every byte is copied or found unchanged");
                unchanged += copied.unchangedBytes();
            }
        }
        assertEquals(
                StagingCopy.compareUnit(blockBytes) == 0,
                unchanged == 0,
                "bytes are found unchanged exactly where blocks and pieces share a unit");
    }

    /**
     * viper.producer.block.skip.unshared: a version whose every compared unit differs from what its buffer held goes
     * without block ids; the next one that shares bytes has every id, hashed from scratch where its buffer's version
     * had none, and a version that shares one unit has them all.
     */
    @Test
    void aVersionThatSharesNothingWithItsBufferGoesWithoutBlockIdsAndTheNextThatSharesHasThemAll() {
        SplittableRandom rnd = new SplittableRandom(7);
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true, true)) {
            List<Part> v1 = List.of(
                    new Part("a", randomBytes(arena, 3 * MIB + 5, rnd), null),
                    new Part("b", randomBytes(arena, 2 * MIB, rnd), null));
            staging.publish(v1, arena);
            assertTrue(staging.lastWithIds, "v1: nothing to compare with, ids");
            List<Part> v2 = List.of(
                    new Part("a", randomBytes(arena, 3 * MIB + 5, rnd), null),
                    new Part("b", randomBytes(arena, 2 * MIB, rnd), null));
            staging.publish(v2, arena);
            assertTrue(staging.lastWithIds, "v2: a new buffer, nothing to compare with, ids");
            List<Part> v3 = List.of(
                    new Part("a", randomBytes(arena, 3 * MIB + 5, rnd), null),
                    new Part("b", randomBytes(arena, 2 * MIB, rnd), null));
            assertEquals(0, staging.publish(v3, arena).unchangedBytes());
            assertFalse(staging.lastWithIds, "v3 shares nothing with v1, whose buffer it took");
            List<Part> v4 = changed(v3, arena, rnd);
            staging.publish(v4, arena);
            assertFalse(staging.lastWithIds, "v4 shares nothing with v2, whose buffer it took");
            // v5 takes v3's buffer, which has no ids: every block of v5 is hashed (checked against its bytes by
            // publish).
            StagingCopy.Copied copied = staging.publish(v4, arena);
            assertTrue(copied.unchangedBytes() > 0, "v5 shares bytes with v3: " + copied);
            assertTrue(staging.lastWithIds, "v5 shares bytes with v3, ids");
            // v6 (into v4's buffer) changes all of a and none of b: it shares b's units, so it keeps every id.
            List<Part> v6 = List.of(new Part("a", randomBytes(arena, 3 * MIB + 5, rnd), null), v4.get(1));
            assertEquals(2 * MIB, staging.publish(v6, arena).unchangedBytes());
            assertTrue(staging.lastWithIds, "v6 shares b with v4, ids");
        }
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true, false)) {
            for (int v = 1; v <= 4; v++) {
                staging.publish(List.of(new Part("a", randomBytes(arena, 2 * MIB + 1, rnd), null)), arena);
                assertTrue(staging.lastWithIds, "v" + v + ": with the key off, every version has ids");
            }
        }
    }

    @Test
    void withCompareOffEveryByteIsCopied() {
        SplittableRandom rnd = new SplittableRandom(3);
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, false)) {
            List<Part> parts = randomLayout(arena, rnd);
            for (int round = 0; round < 4; round++) {
                assertEquals(0, staging.publish(parts, arena).unchangedBytes());
            }
        }
    }

    @Test
    void aBufferComparedWithCopiesOnlyTheChangedBlocks() {
        SplittableRandom rnd = new SplittableRandom(4);
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            List<Part> v1 = List.of(
                    new Part("a", randomBytes(arena, 8 * MIB, rnd), null),
                    new Part("b", randomBytes(arena, MIB + 3, rnd), null));
            assertEquals(0, staging.publish(v1, arena).unchangedBytes(), "v1: a new buffer");
            assertEquals(
                    0,
                    staging.publish(v1, arena).unchangedBytes(),
                    "v2: another new buffer (v1 still served when it was taken)");
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
     * A snapshot in a confined arena may be read by the training thread only: with helpers configured it is still
     * copied and compared, by that thread alone, and what it copies is the same.
     */
    @Test
    void aConfinedSnapshotIsCopiedByTheTrainingThreadAlone() {
        SplittableRandom rnd = new SplittableRandom(5);
        try (Arena shared = Arena.ofShared();
                Arena confined = Arena.ofConfined();
                Staging staging =
                        new Staging(HashAlgorithm.CRC32C, MIB, true, false, new CopyHelpers(POOL, 2, 0, MIB))) {
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
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            List<Part> v1 = List.of(
                    new Part("a", randomBytes(arena, 3 * MIB + 10, rnd), null),
                    new Part("b", randomBytes(arena, MIB, rnd), null));
            staging.publish(v1, arena);
            staging.publish(v1, arena);
            List<Part> v3 = changed(v1, arena, rnd);
            List<DeviceBuffer> onGpu = v3.stream()
                    .map(p -> {
                        DeviceBuffer d = new FakeGpuProvider().allocate(0, p.length());
                        FakeGpuProvider.at(d.devicePointer(), p.length()).copyFrom(p.bytes());
                        return d;
                    })
                    .toList();
            try {
                Snapshot gpu = sink -> {
                    for (int i = 0; i < v3.size(); i++) {
                        sink.addDevice(
                                v3.get(i).name(),
                                DType.U8,
                                new long[] {v3.get(i).length()},
                                onGpu.get(i).devicePointer(),
                                0);
                    }
                };
                assertEquals(
                        0, staging.publish(gpu, v3, arena).unchangedBytes(), "v3 (GPU) into v1's buffer: copied whole");
            } finally {
                onGpu.forEach(DeviceBuffer::close);
            }
            staging.publish(v3, arena);
            assertEquals(
                    4 * MIB + 10,
                    staging.publish(v3, arena).unchangedBytes(),
                    "v5 into v3's buffer: nothing changed since");
        } finally {
            FakeGpuProvider.disable();
        }
    }

    /**
     * The copy has the memory to itself: nothing it copied is handed to the hash pool before it ended. A copy that
     * fails at its last tensor has handed nothing over, although 6 MiB were in.
     */
    @Test
    void nothingIsHashedBeforeTheCopyEnded() throws Exception {
        SplittableRandom rnd = new SplittableRandom(8);
        AtomicInteger submitted = new AtomicInteger();
        ExecutorService counting = new ThreadPoolExecutor(1, 1, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>()) {
            @Override
            public void execute(Runnable task) {
                submitted.incrementAndGet();
                super.execute(task);
            }
        };
        try (Arena arena = Arena.ofShared();
                StagingCache cache = new StagingCache("m", 1L << 30, 1, 5_000, StagingBuffer::retireHandled, null)) {
            Stager stager = new Stager(
                    cache,
                    counting,
                    1,
                    HashAlgorithm.CRC32C,
                    MIB,
                    true,
                    true,
                    new GpuStaging("m"),
                    CopyHelpers.NONE,
                    Optional.empty());
            MemorySegment gone;
            try (Arena closed = Arena.ofConfined()) {
                gone = closed.allocate(2 * MIB);
            }
            List<Part> failing = List.of(
                    new Part("a", randomBytes(arena, 4 * MIB, rnd), null),
                    new Part("b", randomBytes(arena, 2 * MIB, rnd), null),
                    new Part("c", gone, null));
            assertThrows(IllegalStateException.class, () -> stager.stage(snapshot(failing), 1));
            assertEquals(0, submitted.get(), "pieces were handed to the hash pool while the copy went on");
            Stager.Staged staged = stager.stage(snapshot(failing.subList(0, 2)), 2);
            try (TensorHashes hashes = staged.hashes();
                    BlockIds blocks = staged.blocks()) {
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
     * A staging that fails half way (its second tensor's memory is gone) leaves its buffer with new bytes in the first
     * tensor: the buffer must not be compared with as if it still held what it held.
     */
    @Test
    void aStagingThatFailsHalfWayLeavesNothingToCompareWith() {
        SplittableRandom rnd = new SplittableRandom(5);
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            List<Part> v1 = List.of(
                    new Part("a", randomBytes(arena, 4 * MIB, rnd), null),
                    new Part("b", randomBytes(arena, 2 * MIB, rnd), null));
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
            List<Part> good =
                    List.of(new Part("a", a2, null), new Part("b", v1.get(1).bytes(), null));
            StagingCopy.Copied copied = staging.publish(good, arena);
            assertTrue(copied.copiedBytes() >= 4 * MIB, "a's new bytes were copied: " + copied);
            staging.publish(good, arena);
            assertEquals(
                    6 * MIB, staging.publish(good, arena).unchangedBytes(), "an unchanged snapshot is found unchanged");
        }
    }
}
