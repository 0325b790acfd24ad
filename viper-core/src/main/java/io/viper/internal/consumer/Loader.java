package io.viper.internal.consumer;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.TransportClient;

/**
 * Receives a version from one location into the memory of that location's tier and verifies it: {@link HostLoader} into
 * a receive buffer, {@link MappedLoader} by mapping the PFS file, {@link DeviceLoader} into GPU memory. Called by the
 * consumer's fetch thread only.
 */
interface Loader {
    /**
     * Moves version {@code m} from {@code loc} with {@code client} and checks its hashes.
     *
     * @return the verified version, ready to swap in; on failure nothing is kept (buffers handed back)
     * @throws RuntimeException when the transfer fails or a hash does not match
     *     ({@link io.viper.errors.ViperCorruptDataException})
     */
    Loaded load(Manifest m, Location loc, TransportClient client);

    /**
     * A verified version in memory.
     *
     * @param model the version, holding one reference for the serving slot
     * @param bytesMoved bytes transferred; for a version mapped in place, its data section less the blocks it shares
     *     with a serving version mapped in place (those pages were in memory already)
     * @param transferDoneNs {@link System#nanoTime()} when the bytes were in (verification may follow)
     * @param bytesReused bytes not transferred: left in place in the receive buffer or copied from the version the
     *     consumer held, or, mapped in place, shared with the serving mapping
     * @param bytesFromRelays of {@code bytesMoved}, those read from relaying consumers rather than the location
     */
    record Loaded(LoadedModel model, long bytesMoved, long transferDoneNs, long bytesReused, long bytesFromRelays) {
        /** A version that reused nothing. */
        Loaded(LoadedModel model, long bytesMoved, long transferDoneNs) {
            this(model, bytesMoved, transferDoneNs, 0, 0);
        }

        /** A version read from its location alone. */
        Loaded(LoadedModel model, long bytesMoved, long transferDoneNs, long bytesReused) {
            this(model, bytesMoved, transferDoneNs, bytesReused, 0);
        }
    }
}
