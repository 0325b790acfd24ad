package io.viper.internal.consumer;

import io.viper.hash.ContentHash;
import io.viper.manifest.BlockList;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Where each byte of a version a consumer assembles comes from, in this order of preference:
 *
 * <ol>
 *   <li><b>in place</b>: the destination memory already holds the block (a receive buffer still holding an older
 *       version: the same block id at the same data offset, of the same length), so nothing is written;
 *   <li><b>copied</b> from a version the consumer holds (its base) that has a block of that id, wherever it lies there;
 *   <li><b>pulled</b> from a location, every other byte.
 * </ol>
 *
 * Adjacent blocks are merged into one range, copy or ranged read. Without a base or an older version in place, or when
 * the manifests have no blocks, everything is pulled.
 *
 * <p>A plan only says where bytes come from; the caller verifies the assembled bytes, those in place included, against
 * the new manifest's tensor hashes as for a full pull. Immutable; built and used on one thread.
 */
final class BlockPlan {
    /** {@code length} bytes from {@code from} in the base's data section to {@code to} in the destination. */
    record Copy(long from, long to, long length) {}

    /** {@code length} bytes at {@code offset} in the destination that already hold what the new version has there. */
    record InPlace(long offset, long length) {}

    /** A block of a version: its id and length. */
    private record Block(ContentHash id, long length) {}

    private final List<InPlace> inPlace;
    private final List<Copy> copies;
    private final List<ByteRange> pulls;
    private final long inPlaceBytes;
    private final long copiedBytes;
    private final long pulledBytes;

    private BlockPlan(List<InPlace> inPlace, List<Copy> copies, List<ByteRange> pulls) {
        this.inPlace = List.copyOf(inPlace);
        this.copies = List.copyOf(copies);
        this.pulls = List.copyOf(pulls);
        this.inPlaceBytes = inPlace.stream().mapToLong(InPlace::length).sum();
        this.copiedBytes = copies.stream().mapToLong(Copy::length).sum();
        this.pulledBytes = pulls.stream().mapToLong(ByteRange::length).sum();
    }

    /** Pull every byte of {@code wanted} (tensors of the target) to {@code destinations} (one offset per tensor). */
    static BlockPlan full(List<TensorEntry> wanted, List<Long> destinations) {
        return of(wanted, destinations, null);
    }

    /**
     * The plan for {@code wanted} tensors of a version, each to its offset in {@code destinations}, copying the blocks
     * {@code base} (the manifest of the version held; null for none) has.
     */
    static BlockPlan of(List<TensorEntry> wanted, List<Long> destinations, Manifest base) {
        return of(wanted, destinations, base, null);
    }

    /**
     * As {@link #of(List, List, Manifest)}, leaving in place the blocks that {@code inDestination} (the manifest of the
     * verified version whose data section the destination still holds; null for none) has at the same destination
     * offset, with the same id and length.
     */
    static BlockPlan of(List<TensorEntry> wanted, List<Long> destinations, Manifest base, Manifest inDestination) {
        Map<ContentHash, Long> held = base == null ? Map.of() : firstOffsets(base);
        Map<Long, Block> there = inDestination == null ? Map.of() : blocksByOffset(inDestination);
        List<InPlace> inPlace = new ArrayList<>();
        List<Copy> copies = new ArrayList<>();
        List<ByteRange> pulls = new ArrayList<>();
        for (int i = 0; i < wanted.size(); i++) {
            TensorEntry e = wanted.get(i);
            long src = e.info().offset();
            long dst = destinations.get(i);
            long len = e.info().length();
            BlockList blocks = e.blocks();
            if (blocks.isEmpty() || (held.isEmpty() && there.isEmpty())) {
                addPull(pulls, src, len, dst);
                continue;
            }
            for (int j = 0; j < blocks.ids().size(); j++) {
                long start = blocks.start(j);
                long n = blocks.length(j, len);
                ContentHash id = blocks.ids().get(j);
                Long from = held.get(id);
                if (new Block(id, n).equals(there.get(dst + start))) {
                    addInPlace(inPlace, dst + start, n);
                } else if (from != null && base.totalBytes() - from >= n) {
                    addCopy(copies, from, dst + start, n);
                } else {
                    addPull(pulls, src + start, n, dst + start);
                }
            }
        }
        return new BlockPlan(inPlace, copies, pulls);
    }

    /**
     * As {@link #of(List, List, Manifest, Manifest)} for the whole version {@code m}, each tensor at its own offset.
     */
    static BlockPlan of(Manifest m, Manifest base, Manifest inDestination) {
        return of(m.tensors(), m.tensors().stream().map(e -> e.info().offset()).toList(), base, inDestination);
    }

    /** Each block of {@code m} by where it starts in its data section. */
    private static Map<Long, Block> blocksByOffset(Manifest m) {
        Map<Long, Block> at = new HashMap<>();
        for (TensorEntry e : m.tensors()) {
            BlockList b = e.blocks();
            for (int j = 0; j < b.ids().size(); j++) {
                at.put(
                        e.info().offset() + b.start(j),
                        new Block(b.ids().get(j), b.length(j, e.info().length())));
            }
        }
        return at;
    }

    /** Where in {@code m}'s data section each of its block ids starts (the first such block). */
    private static Map<ContentHash, Long> firstOffsets(Manifest m) {
        Map<ContentHash, Long> at = new HashMap<>();
        for (TensorEntry e : m.tensors()) {
            BlockList b = e.blocks();
            for (int j = 0; j < b.ids().size(); j++) {
                at.putIfAbsent(b.ids().get(j), e.info().offset() + b.start(j));
            }
        }
        return at;
    }

    private static void addInPlace(List<InPlace> inPlace, long at, long n) {
        if (!inPlace.isEmpty() && inPlace.getLast().offset() + inPlace.getLast().length() == at) {
            InPlace last = inPlace.getLast();
            inPlace.set(inPlace.size() - 1, new InPlace(last.offset(), last.length() + n));
            return;
        }
        inPlace.add(new InPlace(at, n));
    }

    private static void addCopy(List<Copy> copies, long from, long to, long n) {
        if (!copies.isEmpty()) {
            Copy last = copies.getLast();
            if (last.from() + last.length() == from && last.to() + last.length() == to) {
                copies.set(copies.size() - 1, new Copy(last.from(), last.to(), last.length() + n));
                return;
            }
        }
        copies.add(new Copy(from, to, n));
    }

    private static void addPull(List<ByteRange> pulls, long src, long n, long dst) {
        if (n == 0) {
            return;
        }
        if (!pulls.isEmpty()) {
            ByteRange last = pulls.getLast();
            if (last.sourceOffset() + last.length() == src && last.destinationOffset() + last.length() == dst) {
                pulls.set(
                        pulls.size() - 1,
                        new ByteRange(last.sourceOffset(), last.length() + n, last.destinationOffset()));
                return;
            }
        }
        pulls.add(new ByteRange(src, n, dst));
    }

    /** The ranges to read from a location, in order. */
    List<ByteRange> pulls() {
        return pulls;
    }

    /** Bytes not moved: left in place or copied from the base. */
    long reusedBytes() {
        return inPlaceBytes + copiedBytes;
    }

    /** Bytes the destination already holds. */
    long inPlaceBytes() {
        return inPlaceBytes;
    }

    /** Bytes copied from the base. */
    long copiedBytes() {
        return copiedBytes;
    }

    /** Bytes read from a location. */
    long pulledBytes() {
        return pulledBytes;
    }

    /**
     * Tells {@code arrivals} of every range in place, as if it had just landed, so that its bytes are verified like the
     * others.
     */
    void reportInPlace(TransportClient.Arrivals arrivals) {
        for (InPlace r : inPlace) {
            arrivals.arrived(r.offset(), r.length());
        }
    }

    /** The copies from the base, in destination order: for a copy the caller makes itself (device to device). */
    List<Copy> copies() {
        return copies;
    }

    /**
     * Copies the reused blocks from {@code baseData} (the base's data section, which the caller holds a reference on)
     * into {@code destination} through {@code arrivals} ({@link TransportClient.Arrivals#copy}: a verifier checks each
     * piece as it copies it).
     */
    void copyFrom(MemorySegment baseData, MemorySegment destination, TransportClient.Arrivals arrivals) {
        for (Copy c : copies) {
            arrivals.copy(baseData.asSlice(c.from(), c.length()), destination.asSlice(c.to(), c.length()), c.to());
        }
    }

    @Override
    public String toString() {
        return "BlockPlan[" + inPlace.size() + " ranges of " + inPlaceBytes + " bytes in place, " + copies.size()
                + " copies of " + copiedBytes + " bytes, " + pulls.size() + " reads of " + pulledBytes + " bytes]";
    }
}
