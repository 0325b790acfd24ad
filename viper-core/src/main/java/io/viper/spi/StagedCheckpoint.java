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

    /**
     * How many bytes from {@code offset} (at most {@code length}) may be served now. A producer's staged version is
     * whole: all of them. A consumer relaying a version it is still receiving ({@code viper.consumer.relay.transports})
     * serves only what it has verified against the producer's manifest, as it lands, so that a chain of relays
     * pipelines; a transport that streams such a version ({@link TransportServer#waitsForReadable()}) sends what is
     * readable and waits with {@link #onReadable} for the rest. Returns -1 once the version was abandoned (its receiver
     * failed): nothing more will become readable. Thread-safe; cheap.
     */
    default long readable(long offset, long length) {
        return length;
    }

    /**
     * Calls {@code callback} once, on any thread, as soon as more bytes may have become readable or the version was
     * abandoned (at once when nothing is pending). It must return quickly (reschedule work on the caller's own thread).
     */
    default void onReadable(Runnable callback) {
        callback.run();
    }

    /** Told by a transport of {@code bytes} of this version it sent to a reader, for the served-bytes metrics. */
    default void served(long bytes) {}
}
