package io.viper.spi;

import io.viper.manifest.Manifest;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * The producer-side copy of one checkpoint version that transports serve: its data section in host memory (tensors at
 * their manifest offsets), owned by the producer's staging cache.
 *
 * <p>Transports must take a {@link #tryLease() lease} before reading {@link #data()} on behalf of a consumer and close
 * it when done; the cache recycles the memory only when no lease is open. All methods are thread-safe.
 */
public interface StagedCheckpoint {
    String model();

    long version();

    /** The manifest of this version (hashes included), without locations. */
    Manifest manifest();

    /**
     * The staged bytes, read-only. Valid while a lease is held (or, for transports, between {@code expose} and
     * {@code withdraw}). Segments are allocated by a shared arena and may be read from any thread.
     */
    MemorySegment data();

    /**
     * The same bytes in GPU memory, same layout as {@link #data()}, when the producer staged this version on a GPU;
     * empty otherwise. Valid under the same rules as {@link #data()}; owned by the staging cache (never close it).
     */
    default Optional<DeviceBuffer> device() {
        return Optional.empty();
    }

    /** Takes a read lease, or returns null when this version is gone or being recycled. */
    ReadLease tryLease();
}
