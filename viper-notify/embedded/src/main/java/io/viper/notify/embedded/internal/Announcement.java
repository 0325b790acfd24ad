package io.viper.notify.embedded.internal;

import io.viper.manifest.Manifest;

/**
 * What one PUBLISH or MANIFEST frame carries: an encoded manifest and, for a small version, the version's bytes
 * ({@link io.viper.spi.Notifier#publish(io.viper.manifest.Manifest, java.lang.foreign.MemorySegment)}), else none.
 * Immutable by convention: the arrays are never written after construction and are shared, not copied, between the
 * broker's latest, its pending writes and the frames.
 *
 * @param manifest the encoded manifest
 * @param data the version's bytes in data order, or {@link #NO_DATA}
 */
record Announcement(byte[] manifest, byte[] data) {
    static final byte[] NO_DATA = new byte[0];

    /** A manifest without bytes. */
    static Announcement of(byte[] manifest) {
        return new Announcement(manifest, NO_DATA);
    }

    /**
     * Whether the bytes it carries, if any, are as many as {@code m} describes (both the broker and subscribers check).
     */
    boolean fits(Manifest m) {
        return data.length == 0 || data.length == m.totalBytes();
    }

    /** Bytes it holds, for the broker's limits. */
    long size() {
        return (long) manifest.length + data.length;
    }
}
