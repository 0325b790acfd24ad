package io.viper.internal.consumer;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.TransportClient;
import java.util.Optional;

/**
 * Loads a version from the PFS by mapping its file in place (no receive buffer, no copy) and verifying the mapping; the
 * mapping is closed when the loaded model is released. Where the transport cannot map, the {@link HostLoader} reads the
 * file into a receive buffer instead. Fetch thread only.
 */
final class MappedLoader implements Loader {
    private final Verifier verifier;
    private final HostLoader unmappable;

    MappedLoader(Verifier verifier, HostLoader unmappable) {
        this.verifier = verifier;
        this.unmappable = unmappable;
    }

    @Override
    public Loaded load(Manifest m, Location loc, TransportClient client) {
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
        return new Loaded(new LoadedModel(m, md.data(), md::close), 0, transferDone);
    }
}
