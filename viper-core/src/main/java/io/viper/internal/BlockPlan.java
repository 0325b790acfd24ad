package io.viper.internal;

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
 * Which bytes of a version a consumer copies from a version it already holds (its base) and which
 * it pulls from a location: a block of the new version whose id the base also has is copied from
 * the base's memory, every other byte is pulled. Adjacent blocks are merged into one copy or one
 * ranged read. Without a base, or when either manifest has no blocks, everything is pulled.
 *
 * <p>A plan only says where bytes come from; the caller verifies the assembled bytes against the
 * new manifest's tensor hashes as for a full pull. Immutable; built and used on one thread.
 */
final class BlockPlan {
    /** Copies of more than this are split, so that each piece is verified while the next is copied. */
    private static final long COPY_PIECE = TensorHashes.PIECE;

    /** {@code length} bytes from {@code from} in the base's data section to {@code to} in the destination. */
    record Copy(long from, long to, long length) {
    }

    private final List<Copy> copies;
    private final List<ByteRange> pulls;
    private final long reusedBytes;
    private final long pulledBytes;

    private BlockPlan(List<Copy> copies, List<ByteRange> pulls) {
        this.copies = List.copyOf(copies);
        this.pulls = List.copyOf(pulls);
        this.reusedBytes = copies.stream().mapToLong(Copy::length).sum();
        this.pulledBytes = pulls.stream().mapToLong(ByteRange::length).sum();
    }

    /** Pull every byte of {@code wanted} (tensors of the target) to {@code destinations} (one offset per tensor). */
    static BlockPlan full(List<TensorEntry> wanted, List<Long> destinations) {
        return of(wanted, destinations, null);
    }

    /**
     * The plan for {@code wanted} tensors of a version, each to its offset in {@code destinations},
     * reusing the blocks {@code base} (the manifest of the version held; null for none) has.
     */
    static BlockPlan of(List<TensorEntry> wanted, List<Long> destinations, Manifest base) {
        Map<ContentHash, Long> held = base == null ? Map.of() : blocksOf(base);
        List<Copy> copies = new ArrayList<>();
        List<ByteRange> pulls = new ArrayList<>();
        for (int i = 0; i < wanted.size(); i++) {
            TensorEntry e = wanted.get(i);
            long src = e.info().offset();
            long dst = destinations.get(i);
            long len = e.info().length();
            BlockList blocks = e.blocks();
            if (blocks.isEmpty() || held.isEmpty()) {
                addPull(pulls, src, len, dst);
                continue;
            }
            for (int j = 0; j < blocks.ids().size(); j++) {
                long start = blocks.start(j);
                long n = blocks.length(j, len);
                Long from = held.get(blocks.ids().get(j));
                if (from != null && base.totalBytes() - from >= n) {
                    addCopy(copies, from, dst + start, n);
                } else {
                    addPull(pulls, src + start, n, dst + start);
                }
            }
        }
        return new BlockPlan(copies, pulls);
    }

    /** Where in {@code m}'s data section each of its block ids starts (the first such block). */
    private static Map<ContentHash, Long> blocksOf(Manifest m) {
        Map<ContentHash, Long> at = new HashMap<>();
        for (TensorEntry e : m.tensors()) {
            BlockList b = e.blocks();
            for (int j = 0; j < b.ids().size(); j++) {
                at.putIfAbsent(b.ids().get(j), e.info().offset() + b.start(j));
            }
        }
        return at;
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
                pulls.set(pulls.size() - 1, new ByteRange(last.sourceOffset(), last.length() + n, last.destinationOffset()));
                return;
            }
        }
        pulls.add(new ByteRange(src, n, dst));
    }

    /** The ranges to read from a location, in order. */
    List<ByteRange> pulls() {
        return pulls;
    }

    /** Bytes copied from the base. */
    long reusedBytes() {
        return reusedBytes;
    }

    /** Bytes read from a location. */
    long pulledBytes() {
        return pulledBytes;
    }

    /**
     * Copies the reused blocks from {@code baseData} (the base's data section, which the caller holds
     * a reference on) into {@code destination}, telling {@code arrivals} of each piece as it is in.
     */
    void copyFrom(MemorySegment baseData, MemorySegment destination, TransportClient.Arrivals arrivals) {
        for (Copy c : copies) {
            for (long done = 0; done < c.length(); done += COPY_PIECE) {
                long n = Math.min(COPY_PIECE, c.length() - done);
                MemorySegment.copy(baseData, c.from() + done, destination, c.to() + done, n);
                arrivals.arrived(c.to() + done, n);
            }
        }
    }

    @Override
    public String toString() {
        return "BlockPlan[" + copies.size() + " copies of " + reusedBytes + " bytes, " + pulls.size() + " reads of " + pulledBytes + " bytes]";
    }
}
