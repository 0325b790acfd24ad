package io.viper.internal.consumer;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.spi.TransportClient;
import java.lang.foreign.MemorySegment;
import java.net.URI;

/**
 * Loads a small version from the bytes its announcement carried ({@code viper.producer.inline.bytes}), which the
 * {@link ManifestTracker} keeps for the newest version: the location {@link #LOCATION}, which the {@link PathSelector}
 * puts first when the bytes are there. The {@link HostLoader} copies them into a receive buffer and verifies every
 * tensor there, as any other version, so that what is served is the copy that was verified. Bytes that fail are
 * forgotten: the next location, and any retry, fetches the version over a transport.
 *
 * <p>Called by whichever thread holds the {@link Fetcher}'s load lock: the fetch thread, or the notifier's thread when
 * a receive buffer is free now (then the claim does not wait).
 */
final class InlineLoader implements Loader {
    /** The scheme of {@link #LOCATION}: the path {@code inline} of updates and metrics. */
    static final String SCHEME = "inline";
    /** Where a version whose bytes came with its announcement is read from. */
    static final Location LOCATION = new Location(URI.create(SCHEME + ":announcement"), Tier.HOST);

    private final ManifestTracker tracker;
    private final HostLoader host;

    InlineLoader(ManifestTracker tracker, HostLoader host) {
        this.tracker = tracker;
        this.host = host;
    }

    /**
     * @param client null: no transport is read
     * @throws ViperException when the bytes are gone (a newer version was announced since) or do not verify; its
     *     message says the announcement's bytes are not usable
     */
    @Override
    public Loaded load(Manifest m, Location loc, TransportClient client) {
        MemorySegment data = tracker.inlineData(m.version())
                .orElseThrow(() -> new RetriableViperException(
                        ViperException.Reason.UNAVAILABLE,
                        "the bytes its announcement carried were dropped for newer ones"));
        try {
            return host.loadInline(m, data);
        } catch (ViperException e) {
            tracker.forgetInlineData(m.version());
            String why = "the bytes its announcement carried are not usable (" + e.getMessage() + ")";
            throw ViperException.of(e.reason(), why, e);
        }
    }
}
