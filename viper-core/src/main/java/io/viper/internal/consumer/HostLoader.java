package io.viper.internal.consumer;

import io.viper.errors.ViperCorruptDataException;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.Supplier;

/**
 * Loads a version into a free host receive buffer ({@link ReceiveSlots}) and verifies it while it arrives: a transport
 * that {@linkplain TransportClient#reportsArrivals() reports arrivals} reads the whole model in one request and hands
 * each piece to the {@link Verifier} as it lands; others read it in batches, each verified while the next one
 * transfers. Either way verification overlaps the transfer instead of following it. The buffer goes back to the slots
 * when the loaded model is released, or at once when the load fails. Fetch thread only.
 *
 * <p>Delta ({@link BlockPlan}): when the version has blocks, those that the claimed buffer still holds at the same
 * place, from the version it held before (with double buffering, usually the one before the serving one), are left
 * where they are; those that the serving version in host memory (its base, in the other receive buffer or a mapped
 * file) has are copied from it; only the others are read, as ranges, from the location. The assembled model is verified
 * exactly like a pulled one, every tensor over every byte, those left in place included; if that fails, the whole model
 * is pulled again from the location and verified, so a bad block, left, copied or pulled, is refetched. Neither a base
 * nor a buffer that still holds a verified version means a full pull.
 *
 * <p>Inline ({@link #loadInline}, for the {@link InlineLoader}): a small version whose bytes came with its announcement
 * is copied from there and verified the same way, without a transport.
 */
final class HostLoader implements Loader {
    private static final System.Logger LOG = System.getLogger(HostLoader.class.getName());
    /** Without reported arrivals, verification overlaps the transfer in about this many batches... */
    private static final int BATCHES = 8;
    /** ...of at least this size, so that small models are read in one request. */
    private static final long BATCH_MIN_BYTES = 16L << 20;

    private final ReceiveSlots slots;
    private final Verifier verifier;
    private final Supplier<LoadedModel> base;
    private final boolean reuseHashes;
    /** Where the bytes are read from (the tracker's choice), or null: always from the location. */
    private final SourcedRead sources;

    /**
     * @param base the version to copy unchanged blocks from, retained for the caller
     *     ({@link ServingModel#retainCurrent}), or null when there is none
     */
    HostLoader(ReceiveSlots slots, Verifier verifier, Supplier<LoadedModel> base) {
        this(slots, verifier, base, false, null);
    }

    /**
     * @param reuseHashes {@code viper.consumer.verify.reuse.hashes}: the blocks left in place take the hashes computed
     *     when their version was verified instead of being hashed again
     * @param sources where bytes are read from ({@link SourcedRead}: a relay the tracker names, and this consumer's own
     *     relay servers), or null: from the location only
     */
    HostLoader(
            ReceiveSlots slots,
            Verifier verifier,
            Supplier<LoadedModel> base,
            boolean reuseHashes,
            SourcedRead sources) {
        this.slots = slots;
        this.verifier = verifier;
        this.base = base;
        this.reuseHashes = reuseHashes;
        this.sources = sources;
    }

    @Override
    public Loaded load(Manifest m, Location loc, TransportClient client) {
        Relay relay = new Relay();
        return intoSlot(
                slots.claim(),
                m,
                (dst, inBuffer, inBufferPieces) -> {
                    if (sources != null && !sources.relayServers().isEmpty()) {
                        // Exposed before the tracker hears of this relay, so that a reader it sends here finds it.
                        relay.version = RelayedVersion.expose(m, dst, sources.relayServers(), sources.metrics());
                    }
                    return receive(m, loc, client, dst, inBuffer, inBufferPieces, relay.version);
                },
                relay);
    }

    /** The version as this consumer relays it, once its receive buffer is known; null when it relays nothing. */
    private static final class Relay {
        RelayedVersion version;
    }

    /**
     * Loads {@code m} from {@code data}, the bytes its announcement carried ({@code viper.producer.inline.bytes}):
     * copies them into a receive buffer and checks every tensor there, on this thread (they are small), so that what is
     * served is the copy that was verified.
     *
     * @throws io.viper.errors.ViperCorruptDataException when a tensor's hash does not match
     */
    Loaded loadInline(Manifest m, MemorySegment data) {
        return intoSlot(slots.claim(), m, inlineFill(m, data), new Relay());
    }

    private SlotFill inlineFill(Manifest m, MemorySegment data) {
        return (dst, inBuffer, inBufferPieces) -> {
            MemorySegment.copy(data, 0, dst, 0, m.totalBytes());
            for (TensorEntry e : m.tensors()) {
                verifier.verify(
                        m,
                        InlineLoader.LOCATION,
                        e,
                        dst.asSlice(e.info().offset(), e.info().length()));
            }
            return new Filled(m.totalBytes(), 0, null, 0);
        };
    }

    /** Reads {@code ranges} from where the tracker says, or from {@code loc}; returns the bytes read from relays. */
    private long read(
            Manifest m,
            Location loc,
            TransportClient client,
            List<ByteRange> ranges,
            MemorySegment dst,
            TransportClient.Arrivals check,
            RelayedVersion relayed) {
        if (sources == null) {
            client.read(m, loc, ranges, dst, check);
            return 0;
        }
        return sources.read(m, loc, client, ranges, dst, check, relayed);
    }

    /** Fills a receive slot with {@code m}'s verified data section. */
    private interface SlotFill {
        /**
         * @param inBuffer the verified version whose bytes {@code dst} still holds (the slot's), or null
         * @param inBufferPieces the piece hashes {@code inBuffer}'s verification computed, or null
         */
        Filled fill(MemorySegment dst, Manifest inBuffer, ContentHash[] inBufferPieces);
    }

    /**
     * What a {@link SlotFill} did: the bytes moved and reused, and the hash of every piece of the version (null when it
     * kept none), for the next load into the same slot.
     */
    private record Filled(long moved, long reused, ContentHash[] pieces, long relayed) {}

    /**
     * Lets {@code fill} write and verify {@code m} into the claimed {@code slot}, and hands the slot over to the loaded
     * model; gives it back at once when {@code fill} throws.
     */
    private Loaded intoSlot(ReceiveSlots.Slot slot, Manifest m, SlotFill fill, Relay relay) {
        boolean handedOver = false;
        try {
            MemorySegment dst = slot.segment(m.totalBytes());
            Filled filled = fill.fill(dst, slot.heldWhenClaimed(), slot.heldPiecesWhenClaimed());
            slot.verified(m, reuseHashes ? filled.pieces() : null);
            long transferDone = System.nanoTime();
            RelayedVersion relayed = relay.version;
            Runnable release = slot::release;
            if (relayed != null) {
                relayed.completed();
                release = () -> relayed.retire(slot::release);
            }
            LoadedModel loaded = new LoadedModel(m, dst, release);
            handedOver = true;
            return new Loaded(loaded, filled.moved(), transferDone, filled.reused(), filled.relayed());
        } finally {
            if (!handedOver) {
                if (relay.version != null) {
                    relay.version.abandon();
                }
                slot.release();
            }
        }
    }

    /**
     * Fills {@code dst} with the verified version.
     *
     * @param inBuffer the verified version whose bytes {@code dst} still holds (the slot's), or null
     * @param inBufferPieces the piece hashes {@code inBuffer}'s verification computed, or null
     */
    private Filled receive(
            Manifest m,
            Location loc,
            TransportClient client,
            MemorySegment dst,
            Manifest inBuffer,
            ContentHash[] inBufferPieces,
            RelayedVersion relayed) {
        LoadedModel held = m.blockBytes() > 0 ? base.get() : null;
        try {
            Manifest copyable = held != null && held.hostData() != null ? held.manifest() : null;
            BlockPlan plan = m.blockBytes() == 0 || (copyable == null && inBuffer == null)
                    ? null
                    : BlockPlan.of(m, copyable, inBuffer);
            if (plan == null || plan.reusedBytes() == 0) {
                long[] fromRelays = new long[1];
                ContentHash[] pieces = readVerified(m, loc, client, dst, relayed, fromRelays);
                return new Filled(m.totalBytes(), 0, pieces, fromRelays[0]);
            }
            LOG.log(System.Logger.Level.DEBUG, "{0} v{1}: {2}", m.model(), Long.toString(m.version()), plan);
            // viper.consumer.verify.reuse.hashes: the pieces left in place take the hashes their verification computed.
            ContentHash[] before =
                    reuseHashes && inBufferPieces != null && Verifier.samePieces(m, inBuffer) ? inBufferPieces : null;
            try (Verifier.Overlapped check = verifier.overlapped(m, loc, dst, before)) {
                // First, so that the pool hashes the bytes in place while the others are copied and pulled
                // (without earlier hashes, known bytes are hashed as arrived ones are).
                plan.reportInPlace((offset, length) -> {
                    check.known(offset, length);
                    if (relayed != null) {
                        relayed.markReady(offset, length);
                    }
                });
                if (plan.copiedBytes() > 0) {
                    plan.copyFrom(
                            held.hostData(),
                            dst,
                            relayed == null
                                    ? check
                                    : new TransportClient.Arrivals() {
                                        @Override
                                        public void arrived(long offset, long length) {
                                            check.arrived(offset, length);
                                            relayed.markReady(offset, length);
                                        }

                                        @Override
                                        public void copy(MemorySegment source, MemorySegment destination, long offset) {
                                            check.copy(source, destination, offset);
                                            relayed.markReady(offset, source.byteSize());
                                        }
                                    });
                }
                if (held != null) {
                    held.releaseRef();
                    held = null;
                }
                long fromRelays = 0;
                if (!plan.pulls().isEmpty()) {
                    fromRelays = read(m, loc, client, plan.pulls(), dst, check, relayed);
                }
                check.verify();
                return new Filled(plan.pulledBytes(), plan.reusedBytes(), check.pieces(), fromRelays);
            } catch (ViperCorruptDataException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "{0} v{1}: the blocks left in place, copied from the version held and pulled from {2}"
                                + " did not verify ({3}); pulling the whole version",
                        m.model(),
                        Long.toString(m.version()),
                        loc.uri(),
                        e.getMessage());
                long[] fromRelays = new long[1];
                ContentHash[] pieces = readVerified(m, loc, client, dst, null, fromRelays);
                return new Filled(plan.pulledBytes() + m.totalBytes(), 0, pieces, fromRelays[0]);
            }
        } finally {
            if (held != null) {
                held.releaseRef();
            }
        }
    }

    /**
     * Reads the whole version into {@code dst} and verifies it; returns the hash of every piece, and adds the bytes
     * read from relays to {@code fromRelays[0]}.
     */
    private ContentHash[] readVerified(
            Manifest m,
            Location loc,
            TransportClient client,
            MemorySegment dst,
            RelayedVersion relayed,
            long[] fromRelays) {
        long total = m.totalBytes();
        try (Verifier.Overlapped check = verifier.overlapped(m, loc, dst)) {
            if (client.reportsArrivals()) {
                fromRelays[0] += read(m, loc, client, List.of(new ByteRange(0, total, 0)), dst, check, relayed);
            } else {
                long batch = Math.max(BATCH_MIN_BYTES, total / BATCHES);
                for (long start = 0; start < total; start += batch) {
                    long len = Math.min(batch, total - start);
                    fromRelays[0] +=
                            read(m, loc, client, List.of(new ByteRange(start, len, start)), dst, check, relayed);
                }
            }
            check.verify();
            return check.pieces();
        }
    }
}
