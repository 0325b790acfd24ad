package io.viper.internal.consumer;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.TransportClient;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Loads a version from the PFS by mapping it in place (its file, or its block files: no receive buffer, no copy) and
 * verifying the mapping; the mapping is closed when the loaded model is released. Where the transport cannot map, the
 * {@link HostLoader} reads the version into a receive buffer instead, and so it does for a version with blocks while
 * the serving version is in a receive buffer of this consumer: then only the blocks that buffer lacks are read (a
 * delta), where a mapping would bring every block of the version into memory; and when its receive buffers serve
 * others: this consumer relays ({@code viper.consumer.relay.transports}), or its buffers are handed to other processes
 * ({@link io.viper.spi.ReceiveAllocator#handsBuffersToOtherProcesses}, the agent). Fetch thread only.
 */
final class MappedLoader implements Loader {
    private final Verifier verifier;
    private final HostLoader unmappable;
    /** The serving version, retained for the caller, or null. */
    private final Supplier<LoadedModel> serving;
    /** Whether this consumer's receive buffers serve others (it relays, or other processes read them). */
    private final BooleanSupplier buffersServeOthers;

    MappedLoader(
            Verifier verifier,
            HostLoader unmappable,
            Supplier<LoadedModel> serving,
            BooleanSupplier buffersServeOthers) {
        this.verifier = verifier;
        this.unmappable = unmappable;
        this.serving = serving;
        this.buffersServeOthers = buffersServeOthers;
    }

    @Override
    public Loaded load(Manifest m, Location loc, TransportClient client) {
        LoadedModel current = serving.get();
        try {
            return load(m, loc, client, current);
        } finally {
            if (current != null) {
                current.releaseRef();
            }
        }
    }

    /** Loads {@code m} while {@code current} (retained, or null) serves. */
    private Loaded load(Manifest m, Location loc, TransportClient client, LoadedModel current) {
        boolean servingFromOwnMemory = current != null && current.hostData() != null && !current.mappedInPlace();
        if (m.blockBytes() > 0 && (buffersServeOthers.getAsBoolean() || servingFromOwnMemory)) {
            return unmappable.load(m, loc, client);
        }
        Optional<TransportClient.MappedData> mapped = client.map(m, loc);
        if (mapped.isEmpty()) {
            return unmappable.load(m, loc, client);
        }
        TransportClient.MappedData md = mapped.get();
        long transferDone;
        // Each range is checked as it comes into memory, while the rest is read (a cold file), not after.
        try (Verifier.Overlapped check = verifier.overlapped(m, loc, md.data())) {
            md.populate(check);
            transferDone = System.nanoTime();
            check.verify();
        } catch (RuntimeException e) {
            md.close();
            throw e;
        }
        // The blocks the serving version, mapped in place too, also has are the same files: its mapping held them.
        long shared = m.blockBytes() > 0 && current != null && current.mappedInPlace()
                ? BlockPlan.of(m, current.manifest(), null).reusedBytes()
                : 0;
        return new Loaded(
                new LoadedModel(m, md.data(), md::close, true), m.totalBytes() - shared, transferDone, shared);
    }
}
