package io.viper.spi;

import java.net.URI;
import java.util.List;

/**
 * The producer's answer to "where do I read this version from?" (the tracker of a fleet, as Kraken's tracker or
 * Dragonfly's scheduler): consumers that relay ({@code viper.consumer.relay.transports}) serve the blocks they verified
 * to other consumers, and the tracker hands each reader one source, the producer or a relay, so that the producer sends
 * about one model per version and no source is given more than {@code viper.fleet.readers.per.source} readers of a
 * version while another has room.
 *
 * <p>Implemented by the producer's runtime and installed on its transport servers ({@link TransportServer#track});
 * called on their I/O threads, concurrently: implementations are thread-safe and do not block.
 */
public interface SourceTracker {
    /**
     * Chooses the source of {@code model} v{@code version} for one reader.
     *
     * @param relay the reader's own relay locations (it will serve the version to others); empty when it relays nothing
     * @param failed relays that failed this reader for this version: dropped as sources of it
     * @return the chosen relay's locations, or an empty list: read from the producer
     */
    List<URI> assign(String model, long version, List<URI> relay, List<URI> failed);
}
