package io.viper.internal.producer;

import static io.viper.internal.producer.StagingFixture.MIB;
import static io.viper.internal.producer.StagingFixture.declaring;
import static io.viper.internal.producer.StagingFixture.flipped;
import static io.viper.internal.producer.StagingFixture.randomBytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.Snapshot;
import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.internal.TensorHashes;
import io.viper.internal.producer.StagingFixture.Part;
import io.viper.internal.producer.StagingFixture.Staging;
import io.viper.manifest.BlockList;
import io.viper.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Staging with the changes the training code declares ({@code Snapshot.Changes}): what is copied, what is hashed, what
 * is taken at its word, and when the producer compares instead.
 */
class DeclaredChangesStagingTest {

    /**
     * Where the training code declares what changed, staging into a buffer that holds an older version copies the union
     * of what every version since declared, and the result is what staging from scratch gives: v3 goes into v1's
     * buffer, and v2's change must be copied as well as v3's.
     */
    @Test
    void declaredChangesSinceTheBuffersVersionAreCopiedAndNothingElse() {
        SplittableRandom rnd = new SplittableRandom(6);
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            MemorySegment a1 = randomBytes(arena, 8 * MIB, rnd);
            MemorySegment b1 = randomBytes(arena, MIB + 3, rnd);
            List<Part> v1 = List.of(new Part("a", a1, null), new Part("b", b1, null));
            staging.publish(declaring(v1, List.of(Snapshot.Changes.none(), Snapshot.Changes.none())), v1, arena);
            MemorySegment a2 = flipped(arena, a1, 2 * MIB + 10);
            List<Part> v2 = List.of(new Part("a", a2, null), new Part("b", b1, null));
            assertEquals(
                    0,
                    staging.publish(
                                    declaring(
                                            v2,
                                            List.of(Snapshot.Changes.range(2 * MIB + 10, 1), Snapshot.Changes.none())),
                                    v2,
                                    arena)
                            .unchangedBytes(),
                    "v2: a new buffer");
            MemorySegment a3 = flipped(arena, a2, 5 * MIB + 7);
            MemorySegment b3 = flipped(arena, b1, MIB + 1);
            List<Part> v3 = List.of(new Part("a", a3, null), new Part("b", b3, null));
            StagingCopy.Copied copied = staging.publish(
                    declaring(v3, List.of(Snapshot.Changes.range(5 * MIB, 8), Snapshot.Changes.range(MIB, 3))),
                    v3,
                    arena);
            assertEquals(
                    2 * MIB + 3, copied.copiedBytes(), "blocks 2 (v2's) and 5 (v3's) of a, and b's tail: " + copied);
            assertEquals(7 * MIB, copied.unchangedBytes());
        }
    }

    /**
     * A unit copied into an older buffer for an earlier version's change, and untouched since the newest version, takes
     * the newest version's hashes: only what changed since it is hashed. Shown with a byte changed there without a
     * declaration: it is copied (the unit had to be) but not hashed, so the tensor's hash is that of the bytes the
     * declarations describe. Consumers check every tensor before a swap and would refuse such a version; a declared one
     * hashes as from scratch ({@link #declaredChangesSinceTheBuffersVersionAreCopiedAndNothingElse}).
     */
    @Test
    void aUnitCopiedForAnEarlierChangeTakesTheNewestVersionsHashes() {
        SplittableRandom rnd = new SplittableRandom(9);
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            MemorySegment a1 = randomBytes(arena, 4 * MIB, rnd);
            List<Part> v1 = List.of(new Part("a", a1, null));
            staging.publish(declaring(v1, List.of(Snapshot.Changes.none())), v1, arena);
            MemorySegment a2 = flipped(arena, a1, MIB + 10);
            List<Part> v2 = List.of(new Part("a", a2, null));
            staging.publish(declaring(v2, List.of(Snapshot.Changes.range(MIB + 10, 1))), v2, arena);
            // v3 goes into v1's buffer: unit 1 is copied for v2's change; v3 declares unit 3 only, and also changed
            // unit 1
            MemorySegment declared = flipped(arena, a2, 3 * MIB);
            MemorySegment actual = flipped(arena, declared, MIB + 20);
            Stager.Staged staged = staging.stager.stage(
                    declaring(List.of(new Part("a", actual, null)), List.of(Snapshot.Changes.range(3 * MIB, 1))), 3);
            try (TensorHashes hashes = staged.hashes();
                    BlockIds blocks = staged.blocks()) {
                ContentHash[] tensorHashes = hashes.await();
                List<BlockList> ids = blocks.await();
                assertEquals(2 * MIB, staged.copied().copiedBytes(), "units 1 (v2's change) and 3 (v3's)");
                assertEquals(
                        -1,
                        actual.mismatch(staged.buffer().data().asSlice(0, 4 * MIB)),
                        "unit 1 was copied, undeclared byte and all");
                assertEquals(
                        HashAlgorithm.CRC32C.hash(declared),
                        tensorHashes[0],
                        "unit 1's hash is v2's: not hashed again");
                assertEquals(
                        BlockList.ID_ALGORITHM.hash(a2.asSlice(MIB, MIB)),
                        ids.getFirst().ids().get(1),
                        "so is its block id");
                assertEquals(
                        BlockList.ID_ALGORITHM.hash(declared.asSlice(3 * MIB, MIB)),
                        ids.getFirst().ids().get(3),
                        "unit 3 was hashed");
            }
            staging.cache.abandon(staged.buffer());
        }
    }

    /**
     * The declaration is taken at its word: a byte changed outside it is not read, so the version keeps the buffer's
     * byte, and every hash and block id is that of what the buffer holds.
     */
    @Test
    void aByteChangedOutsideTheDeclaredRangesIsNotRead() {
        SplittableRandom rnd = new SplittableRandom(7);
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            MemorySegment a1 = randomBytes(arena, 4 * MIB, rnd);
            List<Part> v1 = List.of(new Part("a", a1, null));
            staging.publish(declaring(v1, List.of(Snapshot.Changes.none())), v1, arena);
            staging.publish(declaring(v1, List.of(Snapshot.Changes.none())), v1, arena);
            MemorySegment a3 = flipped(arena, flipped(arena, a1, 3 * MIB + 5), 1);
            Snapshot onlyTheFirstByte =
                    declaring(List.of(new Part("a", a3, null)), List.of(Snapshot.Changes.range(1, 1)));
            // What the buffer must hold: v1 with the declared byte changed, not the undeclared one.
            List<Part> published = List.of(new Part("a", flipped(arena, a1, 1), null));
            StagingCopy.Copied copied = staging.publish(onlyTheFirstByte, published, arena);
            assertEquals(MIB, copied.copiedBytes(), "the declared unit only");
        }
    }

    /**
     * Without a declaration from every tensor, or after a staging that failed (the training code's record was handed
     * over and lost), the snapshot is compared as usual.
     */
    @Test
    void anUndeclaredTensorOrAFailedStagingMeansACompare() {
        SplittableRandom rnd = new SplittableRandom(8);
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
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
            assertThrows(
                    io.viper.errors.ViperConfigException.class, () -> staging.stager.stage(failing, ++staging.version));
            // Said relative to the failed snapshot, which was not staged: the producer compares instead of trusting it.
            MemorySegment a6 = flipped(arena, a1, MIB + 1);
            List<Part> v6 =
                    List.of(new Part("a", a6, null), new Part("b", v3.get(1).bytes(), null));
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
            assertThrows(
                    io.viper.errors.ViperConfigException.class, () -> staging.stager.stage(refused, ++staging.version));
            List<Part> after =
                    List.of(new Part("a", a8, null), new Part("b", v3.get(1).bytes(), null));
            assertTrue(
                    staging.publish(declaring(after, nothing), after, arena).copiedBytes() >= MIB,
                    "a's change, declared by the refused snapshot, was found by comparing");
        }
    }

    @Test
    void aDeclaredRangePastTheTensorIsRefusedNamingIt() {
        try (Arena arena = Arena.ofShared();
                Staging staging = new Staging(HashAlgorithm.CRC32C, MIB, true)) {
            MemorySegment a = arena.allocate(100);
            Snapshot bad = sink -> sink.add("w", DType.U8, new long[] {100}, a, Snapshot.Changes.range(90, 20));
            io.viper.errors.ViperConfigException e =
                    assertThrows(io.viper.errors.ViperConfigException.class, () -> staging.stager.stage(bad, 1));
            assertEquals("tensor w: changed range [90, 110) ends past its 100 bytes", e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> Snapshot.Changes.range(-1, 2));
        }
    }

    @Test
    void declaredRangesMergeAndTellWhichUnitsTheyTouch() {
        long[] merged = DeclaredChanges.merge(new long[] {10, 20, 0, 5, 15, 30, 40, 40, 50, 60});
        assertEquals(
                List.of(0L, 5L, 10L, 30L, 50L, 60L),
                Arrays.stream(merged).boxed().toList());
        assertTrue(DeclaredChanges.touches(merged, 0, 1));
        assertFalse(DeclaredChanges.touches(merged, 5, 10), "between two ranges");
        assertTrue(DeclaredChanges.touches(merged, 29, 31));
        assertFalse(DeclaredChanges.touches(merged, 30, 50), "ends are exclusive");
        assertFalse(DeclaredChanges.touches(merged, 60, 100));
        assertFalse(DeclaredChanges.touches(new long[0], 0, 100));
    }
}
