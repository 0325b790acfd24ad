package io.viper.internal.consumer;

import io.viper.errors.ViperCorruptDataException;
import io.viper.hash.ContentHash;
import io.viper.manifest.BlockList;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Checks a version arriving from a source that is not trusted to have it right (a relay), or that this consumer relays
 * on, unit by unit as the bytes land: a block against its id in the producer's manifest (XXH3-128), or, for a version
 * without block ids, a whole tensor against its hash. Only a verified unit is passed on to the tensor check
 * ({@link Verifier.Overlapped}, which checks every tensor again before the swap) and made readable to this consumer's
 * own readers ({@link RelayedVersion}). A unit that fails its check throws {@link ViperCorruptDataException} out of
 * {@link #arrived}, which ends the read from that source; its bytes count as missing ({@link #missing}), to be read
 * again from another.
 *
 * <p>{@link #arrived} is called by the transport's reading thread (one range once; hashing a block there takes about a
 * hundredth of its transfer time on a fast link); {@link #missing} and {@link #source} by the fetch thread between
 * reads.
 */
final class UnitCheck implements TransportClient.Arrivals {
    private final Manifest manifest;
    private final MemorySegment data;
    private final TransportClient.Arrivals verified;
    private final RelayedVersion relayed;
    /** Per unit: the start and length of the bytes its hash covers (a block or a tensor), and what arrived of them. */
    private final long[] from;

    private final long[] length;
    private final ContentHash[] expected;
    private final String[] tensor;
    private final AtomicLongArray arrived;
    private final boolean[] done;
    private volatile URI source;
    private volatile ViperCorruptDataException failure;

    /**
     * @param data the version's data section, where the bytes land
     * @param verified told of each unit once it verified (the tensor check)
     * @param relayed the version as this consumer relays it, or null
     */
    UnitCheck(Manifest manifest, MemorySegment data, TransportClient.Arrivals verified, RelayedVersion relayed) {
        this.manifest = manifest;
        this.data = data;
        this.verified = verified;
        this.relayed = relayed;
        List<Unit> units = new ArrayList<>();
        for (TensorEntry e : manifest.tensors()) {
            long off = e.info().offset();
            long len = e.info().length();
            BlockList b = e.blocks();
            if (b.isEmpty()) {
                units.add(new Unit(off, len, e.hash(), "tensor '" + e.name() + "'"));
            } else {
                for (int j = 0; j < b.ids().size(); j++) {
                    units.add(new Unit(
                            off + b.start(j),
                            b.length(j, len),
                            b.ids().get(j),
                            "tensor '" + e.name() + "' block " + j));
                }
            }
        }
        units.sort(Comparator.comparingLong(Unit::from));
        int n = units.size();
        this.from = new long[n];
        this.length = new long[n];
        this.expected = new ContentHash[n];
        this.tensor = new String[n];
        for (int i = 0; i < n; i++) {
            Unit x = units.get(i);
            from[i] = x.from();
            length[i] = x.length();
            expected[i] = x.hash();
            tensor[i] = x.name();
        }
        this.arrived = new AtomicLongArray(from.length);
        this.done = new boolean[from.length];
    }

    private record Unit(long from, long length, ContentHash hash, String name) {}

    /** The source the next bytes come from, for the messages. */
    void source(URI uri) {
        this.source = uri;
    }

    @Override
    public void arrived(long offset, long len) {
        int u = first(offset);
        for (; u < from.length && from[u] < offset + len; u++) {
            long lo = Math.max(offset, from[u]);
            long hi = Math.min(offset + len, from[u] + length[u]);
            if (hi <= lo) {
                continue;
            }
            if (arrived.addAndGet(u, hi - lo) == length[u]) {
                check(u);
            }
        }
    }

    /** The first unit that may hold bytes at or after {@code offset}: the last starting at or before it, or 0. */
    private int first(long offset) {
        int i = Arrays.binarySearch(from, offset);
        return i >= 0 ? i : Math.max(0, -i - 2);
    }

    private void check(int u) {
        MemorySegment bytes = data.asSlice(from[u], length[u]);
        ContentHash got = expected[u].algorithm().hash(bytes);
        if (!got.equals(expected[u])) {
            arrived.set(u, 0);
            ViperCorruptDataException e = new ViperCorruptDataException(manifest.model() + " v" + manifest.version()
                    + " from " + source + ": " + tensor[u] + " does not match the producer's manifest (" + got.toHex()
                    + ", expected " + expected[u].toHex() + ")");
            failure = e;
            throw e;
        }
        synchronized (done) {
            done[u] = true;
        }
        verified.arrived(from[u], length[u]);
        if (relayed != null) {
            relayed.markReady(relayed.unitOf(from[u]));
        }
    }

    /**
     * The check that failed during the last read, if one did: a transport whose arrivals run on a thread of its own may
     * not pass the exception on. Cleared by {@link #missing}.
     */
    ViperCorruptDataException failure() {
        return failure;
    }

    /**
     * The parts of {@code ranges} (data-section offsets, read to the same offsets) not verified yet: what a failed
     * source left to read. Units half arrived from it count as missing and start over.
     */
    List<ByteRange> missing(List<ByteRange> ranges) {
        List<ByteRange> out = new ArrayList<>();
        failure = null;
        synchronized (done) {
            for (int u = 0; u < from.length; u++) {
                if (!done[u]) {
                    arrived.set(u, 0);
                }
            }
            for (ByteRange r : ranges) {
                long pos = r.sourceOffset();
                long end = pos + r.length();
                while (pos < end) {
                    int u = first(pos);
                    boolean covered = u < from.length && done[u] && from[u] <= pos && pos < from[u] + length[u];
                    long next = covered ? Math.min(end, from[u] + length[u]) : Math.min(end, nextDoneStart(pos, end));
                    if (!covered) {
                        out.add(new ByteRange(pos, next - pos, r.destinationOffset() + (pos - r.sourceOffset())));
                    }
                    pos = next;
                }
            }
        }
        return out;
    }

    /** Where the next verified unit at or after {@code pos} starts, or {@code end}. */
    private long nextDoneStart(long pos, long end) {
        for (int u = first(pos); u < from.length && from[u] < end; u++) {
            if (done[u] && from[u] > pos) {
                return from[u];
            }
        }
        return end;
    }
}
