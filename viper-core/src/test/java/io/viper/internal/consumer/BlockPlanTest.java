package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.viper.hash.ContentHash;
import io.viper.manifest.BlockList;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * Where a plan takes each block of a new version from: left in place where the destination holds the same block at the
 * same offset, else copied from the base if it has the id anywhere, else pulled; and when a receive buffer's content
 * may be left in place at all.
 */
class BlockPlanTest {
    private static final long B = 4096;
    private static final Location LOC = new Location(URI.create("mem://src"), Tier.HOST);
    private static final ContentHash A = id(1);
    private static final ContentHash C = id(3);
    private static final ContentHash D = id(4);
    private static final ContentHash X = id(24);
    private static final ContentHash Y = id(25);

    private static ContentHash id(long n) {
        return new ContentHash(0x5eed, n);
    }

    /** One tensor of {@code length} bytes cut into blocks of {@link #B} with these ids. */
    private static Manifest version(long v, long length, ContentHash... ids) {
        TensorInfo info = new TensorInfo("w", DType.U8, new long[] {length}, 0, length);
        TensorEntry e =
                new TensorEntry(info, ContentHash.crc32c(0), OptionalLong.empty(), new BlockList(B, List.of(ids)));
        return new Manifest("m", v, "test", 0, new LinkedHashMap<>(), List.of(e), List.of(LOC));
    }

    private static BlockPlan plan(Manifest target, Manifest base, Manifest inDestination) {
        return BlockPlan.of(target.tensors(), List.of(0L), base, inDestination);
    }

    /** The ranges a plan reports as in place. */
    private static List<ByteRange> inPlace(BlockPlan p) {
        List<ByteRange> out = new ArrayList<>();
        p.reportInPlace((from, len) -> out.add(new ByteRange(from, len, from)));
        return out;
    }

    @Test
    void aBlockTheDestinationHoldsAtTheSameOffsetIsLeftInPlaceTheRestIsPulled() {
        Manifest held = version(1, 4 * B, A, id(2), C, D);
        BlockPlan p = plan(version(2, 4 * B, A, X, C, Y), null, held);
        assertEquals(List.of(new ByteRange(0, B, 0), new ByteRange(2 * B, B, 2 * B)), inPlace(p));
        assertEquals(List.of(new ByteRange(B, B, B), new ByteRange(3 * B, B, 3 * B)), p.pulls());
        assertEquals(2 * B, p.inPlaceBytes());
        assertEquals(0, p.copiedBytes());
        assertEquals(2 * B, p.reusedBytes(), "bytes in place count as reused");
        assertEquals(2 * B, p.pulledBytes());
    }

    @Test
    void inPlaceComesFirstThenACopyFromTheBaseThenAPull() {
        Manifest held = version(1, 4 * B, A, id(2), C, D);
        Manifest base = version(2, 4 * B, A, X, C, id(9));
        BlockPlan p = plan(version(3, 4 * B, A, X, Y, D), base, held);
        assertEquals(
                List.of(new ByteRange(0, B, 0), new ByteRange(3 * B, B, 3 * B)),
                inPlace(p),
                "A although the base has it too, and D");
        assertEquals(B, p.copiedBytes(), "X, which only the base has");
        assertEquals(List.of(new ByteRange(2 * B, B, 2 * B)), p.pulls(), "Y, which neither has");
        assertEquals(3 * B, p.reusedBytes());
    }

    @Test
    void anIdTheDestinationHoldsAtAnotherOffsetIsNotInPlace() {
        Manifest held = version(1, 4 * B, A, X, C, D);
        Manifest swapped = version(2, 4 * B, X, A, C, D);
        BlockPlan pulled = plan(swapped, null, held);
        assertEquals(List.of(new ByteRange(2 * B, 2 * B, 2 * B)), inPlace(pulled), "only C and D are where they were");
        assertEquals(List.of(new ByteRange(0, 2 * B, 0)), pulled.pulls());

        BlockPlan copied = plan(swapped, held, held);
        assertEquals(2 * B, copied.inPlaceBytes());
        assertEquals(2 * B, copied.copiedBytes(), "a base with the same bytes elsewhere is copied from instead");
        assertEquals(List.of(), copied.pulls());
    }

    @Test
    void aBlockWithTheSameIdButAnotherLengthIsNotInPlace() {
        Manifest held = version(1, B + 10, A, X);
        BlockPlan p = plan(version(2, 2 * B, A, X), null, held);
        assertEquals(List.of(new ByteRange(0, B, 0)), inPlace(p));
        assertEquals(List.of(new ByteRange(B, B, B)), p.pulls());
    }

    @Test
    void withoutBlocksNothingIsInPlace() {
        TensorInfo info = new TensorInfo("w", DType.U8, new long[] {2 * B}, 0, 2 * B);
        Manifest noBlocks = new Manifest(
                "m",
                2,
                "test",
                0,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(info, ContentHash.crc32c(0))),
                List.of(LOC));
        BlockPlan p = plan(noBlocks, null, version(1, 2 * B, A, X));
        assertEquals(0, p.reusedBytes());
        assertEquals(List.of(new ByteRange(0, 2 * B, 0)), p.pulls());
    }

    @Test
    void aSlotOffersTheVersionItHeldVerifiedUntilALoadIntoItFails() {
        Manifest v1 = version(1, 4 * B, A, id(2), C, D);
        Manifest v2 = version(2, 4 * B, A, X, C, D);
        try (ReceiveSlots slots = new ReceiveSlots("m", 1 << 20, 10)) {
            ReceiveSlots.Slot s = slots.claim();
            s.segment(v1.totalBytes());
            assertNull(s.heldWhenClaimed(), "a new buffer holds nothing");
            s.verified(v1);
            s.release();

            s = slots.claim();
            s.segment(v2.totalBytes());
            assertSame(v1, s.heldWhenClaimed());
            assertEquals(3 * B, plan(v2, null, s.heldWhenClaimed()).inPlaceBytes());
            s.release(); // the load into it failed: its bytes are no version's

            s = slots.claim();
            s.segment(v2.totalBytes());
            assertNull(s.heldWhenClaimed());
            assertEquals(0, plan(v2, null, s.heldWhenClaimed()).reusedBytes(), "nothing in place after a failed load");
            s.release();
        }
    }

    @Test
    void aSlotThatGrowsForTheNextVersionHoldsNothingOfTheLastOne() {
        Manifest v1 = version(1, 2 * B, A, X);
        Manifest v2 = version(2, 3 * B, A, X, C);
        try (ReceiveSlots slots = new ReceiveSlots("m", 1 << 20, 10)) {
            ReceiveSlots.Slot s = slots.claim();
            s.segment(v1.totalBytes());
            s.verified(v1);
            s.release();

            s = slots.claim();
            s.segment(v2.totalBytes());
            assertNull(s.heldWhenClaimed(), "reallocated");
            assertEquals(0, plan(v2, null, s.heldWhenClaimed()).reusedBytes(), "nothing in place in a grown slot");
            s.verified(v2);
            s.release();

            s = slots.claim();
            s.segment(v1.totalBytes());
            assertSame(v2, s.heldWhenClaimed(), "a smaller version fits in the same memory, which still holds v2");
            assertEquals(2 * B, plan(v1, null, s.heldWhenClaimed()).inPlaceBytes());
            s.release();
        }
    }
}
