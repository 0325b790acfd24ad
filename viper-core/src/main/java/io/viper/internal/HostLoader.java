package io.viper.internal;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Loads a version into a free host receive buffer ({@link ReceiveSlots}): reads it through the
 * transport in tensor-aligned batches and hands each batch to the {@link Verifier} while the next
 * one transfers, so that verification overlaps the transfer instead of following it. The buffer
 * goes back to the slots when the loaded model is released, or at once when the load fails.
 * Fetch thread only.
 */
final class HostLoader implements Loader {
    /** Verification overlaps the transfer in about this many batches... */
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
        List<TensorEntry> entries = m.tensors();
        long batchTarget = Math.max(BATCH_MIN_BYTES, m.totalBytes() / BATCHES);
        try (Verifier.Overlapped check = verifier.overlapped(m, loc)) {
            int i = 0;
            while (i < entries.size()) {
                int j = i;
                long start = entries.get(i).info().offset();
                long len = 0;
                while (j < entries.size() && (j == i || len < batchTarget)) {
                    len += entries.get(j).info().length();
                    j++;
                }
                if (len > 0) {
                    client.read(m, loc, List.of(new ByteRange(start, len, start)), dst);
                }
                for (int k = i; k < j; k++) {
                    TensorEntry e = entries.get(k);
                    check.submit(e, dst.asSlice(e.info().offset(), e.info().length()));
                }
                i = j;
            }
            check.verify();
        }
    }
}
