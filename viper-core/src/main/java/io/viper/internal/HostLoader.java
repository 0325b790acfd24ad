package io.viper.internal;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Loads a version into a free host receive buffer ({@link ReceiveSlots}) and verifies it while it
 * arrives: a transport that {@linkplain TransportClient#reportsArrivals() reports arrivals} reads
 * the whole model in one request and hands each piece to the {@link Verifier} as it lands; others
 * read it in batches, each verified while the next one transfers. Either way verification overlaps
 * the transfer instead of following it. The buffer goes back to the slots when the loaded model is
 * released, or at once when the load fails. Fetch thread only.
 */
final class HostLoader implements Loader {
    /** Without reported arrivals, verification overlaps the transfer in about this many batches... */
    private static final int BATCHES = 8;
    /** ...of at least this size, so that small models are read in one request. */
    private static final long BATCH_MIN_BYTES = 16L << 20;

    private final ReceiveSlots slots;
    private final Verifier verifier;

    HostLoader(ReceiveSlots slots, Verifier verifier) {
        this.slots = slots;
        this.verifier = verifier;
    }

    @Override
    public Loaded load(Manifest m, Location loc, TransportClient client) {
        ReceiveSlots.Slot slot = slots.claim();
        boolean handedOver = false;
        try {
            MemorySegment dst = slot.segment(m.totalBytes());
            readVerified(m, loc, client, dst);
            long transferDone = System.nanoTime();
            LoadedModel loaded = new LoadedModel(m, dst, slot::release);
            handedOver = true;
            return new Loaded(loaded, m.totalBytes(), transferDone);
        } finally {
            if (!handedOver) {
                slot.release();
            }
        }
    }

    private void readVerified(Manifest m, Location loc, TransportClient client, MemorySegment dst) {
        long total = m.totalBytes();
        try (Verifier.Overlapped check = verifier.overlapped(m, loc, dst)) {
            if (client.reportsArrivals()) {
                client.read(m, loc, List.of(new ByteRange(0, total, 0)), dst, check::arrived);
            } else {
                long batch = Math.max(BATCH_MIN_BYTES, total / BATCHES);
                for (long start = 0; start < total; start += batch) {
                    long len = Math.min(batch, total - start);
                    client.read(m, loc, List.of(new ByteRange(start, len, start)), dst);
                    check.arrived(start, len);
                }
            }
            check.verify();
        }
    }
}
