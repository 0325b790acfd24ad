package io.viper;

import io.viper.manifest.Location;
import io.viper.manifest.Tier;

/**
 * What a consumer did to move to a new version: which location it read from, how many bytes it moved and how many it
 * reused from the version it held, and how long it took.
 *
 * @param model the model
 * @param version the version now serving
 * @param previous the version served before (0 if none)
 * @param location where the bytes came from
 * @param bytes bytes transferred; for a version mapped in place from the PFS, its data section, less the blocks it
 *     shares with the version mapped before it (their pages were in memory already)
 * @param latencyMs from the producer's publish call to the swap, by the wall clocks of both sides (meaningful on one
 *     host or with synchronised clocks)
 * @param transferMs time spent reading the bytes (host paths verify hashes batch by batch while later batches arrive,
 *     so that work is included here)
 * @param verifyMs time spent checking content hashes after the bytes were in place
 * @param fallbacks locations that failed before this one succeeded
 * @param reusedBytes bytes of unchanged blocks not transferred: left in place in the receive buffer, which still held
 *     them from an older version, or copied from the version served before, or, mapped in place, shared with the
 *     version mapped before it (0 for a full pull)
 */
public record ModelUpdate(
        String model,
        long version,
        long previous,
        Location location,
        long bytes,
        double latencyMs,
        double transferMs,
        double verifyMs,
        int fallbacks,
        long reusedBytes,
        long relayedBytes) {
    /** An update read from its location alone. */
    public ModelUpdate(
            String model,
            long version,
            long previous,
            Location location,
            long bytes,
            double latencyMs,
            double transferMs,
            double verifyMs,
            int fallbacks,
            long reusedBytes) {
        this(model, version, previous, location, bytes, latencyMs, transferMs, verifyMs, fallbacks, reusedBytes, 0);
    }

    /** An update that reused nothing (a full pull). */
    public ModelUpdate(
            String model,
            long version,
            long previous,
            Location location,
            long bytes,
            double latencyMs,
            double transferMs,
            double verifyMs,
            int fallbacks) {
        this(model, version, previous, location, bytes, latencyMs, transferMs, verifyMs, fallbacks, 0);
    }

    /** Bytes read from relaying consumers. */
    public long bytesFromRelays() {
        return relayedBytes;
    }

    /** Bytes read from the PFS (the location is a {@code file://} one). */
    public long bytesFromPfs() {
        return location.tier() == Tier.PFS ? bytes - relayedBytes : 0;
    }

    /** Bytes read from the producer itself. */
    public long bytesFromProducer() {
        return location.tier() == Tier.PFS ? 0 : bytes - relayedBytes;
    }

    /** The transport scheme used ({@code ucx}, {@code tcp}, {@code file}, ...). */
    public String path() {
        return location.scheme();
    }
}
