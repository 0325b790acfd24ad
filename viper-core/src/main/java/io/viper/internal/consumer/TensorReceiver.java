package io.viper.internal.consumer;

import io.viper.errors.ViperCorruptDataException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.TransportClient;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Receives the tensors {@link Fetcher#fetchTensors} asked for into memory of their own: the blocks the serving version
 * has are copied from it, the rest pulled, everything checked as it lands. Called on the fetching caller's thread.
 */
final class TensorReceiver {
    private static final System.Logger LOG = System.getLogger(Fetcher.class.getName());

    private TensorReceiver() {}

    /**
     * Fills {@code dst} with the verified {@code wanted} tensors, each at its destination offset, copying the blocks
     * the serving version has and pulling the rest, checked as they land (the copies in the same pass,
     * {@link Verifier.Overlapped#copy}); when the result does not verify, pulls them whole once more. Returns the bytes
     * moved and the bytes reused.
     */
    static long[] receive(
            String model,
            ServingModel serving,
            Verifier verifier,
            Manifest m,
            Location loc,
            TransportClient client,
            List<TensorEntry> wanted,
            List<Long> destinations,
            MemorySegment dst) {
        LoadedModel held = m.blockBytes() > 0 ? serving.retainCurrent() : null;
        BlockPlan plan;
        try (Verifier.Overlapped check = verifier.overlapped(m, loc, wanted, destinations, dst)) {
            try {
                boolean onHost = held != null && held.hostData() != null;
                plan = onHost
                        ? BlockPlan.of(wanted, destinations, held.manifest())
                        : BlockPlan.full(wanted, destinations);
                if (plan.copiedBytes() > 0) {
                    plan.copyFrom(held.hostData(), dst, check);
                }
            } finally {
                if (held != null) {
                    held.releaseRef();
                }
            }
            if (!plan.pulls().isEmpty()) {
                client.read(m, loc, plan.pulls(), dst, check);
            }
            try {
                check.verify();
                return new long[] {plan.pulledBytes(), plan.reusedBytes()};
            } catch (ViperCorruptDataException e) {
                if (plan.reusedBytes() == 0) {
                    throw e;
                }
                LOG.log(
                        System.Logger.Level.WARNING,
                        "consumer {0} v{1}: tensors assembled from reused and pulled blocks did not verify ({2});"
                                + " pulling them whole",
                        model,
                        Long.toString(m.version()),
                        e.getMessage());
            }
        }
        BlockPlan full = BlockPlan.full(wanted, destinations);
        try (Verifier.Overlapped check = verifier.overlapped(m, loc, wanted, destinations, dst)) {
            client.read(m, loc, full.pulls(), dst, check);
            check.verify();
        }
        return new long[] {plan.pulledBytes() + full.pulledBytes(), 0};
    }
}
