package io.viper.spi;

import io.viper.auth.Handshake;
import io.viper.errors.ViperConfigException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.net.Tls;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.List;
import java.util.Optional;

/**
 * Consumer side of a transport: copies byte ranges of a published checkpoint into the consumer's buffer.
 *
 * <p>Created by {@link TransportProvider#openClient}; owned and closed by the consumer. Thread-safe: several fetches
 * may run at once. Errors: {@link io.viper.errors.RetriableViperException} when the producer is gone or the connection
 * broke, {@link io.viper.errors.ViperNotFoundException} when the location no longer (or not yet) holds the version,
 * another {@link io.viper.errors.ViperException} otherwise; the consumer falls back to the next location on any of
 * them. A producer that refuses this consumer as configured is a {@link ViperConfigException} with the cause that
 * {@link #refusesConsumer} looks for.
 */
public interface TransportClient extends AutoCloseable {

    /**
     * Whether {@code failure} of a read says that the producer refuses this consumer as configured, which trying again
     * cannot change: a {@link ViperConfigException} caused by a {@link Handshake.Refused} on
     * {@linkplain Handshake.Refused#credentials() credentials} (a wrong or missing secret, a producer that cannot prove
     * the consumer's key) or by a certificate exception ({@link Tls#certificateRefused}: the producer's TLS certificate
     * is not trusted or names another host). When no location of a version delivers it and one refused so, the consumer
     * stops following the model ({@link io.viper.ViperConsumer#onFailure}). Every other failure, a stranger on the
     * producer's port and a host that does not resolve included, is retried.
     */
    static boolean refusesConsumer(Throwable failure) {
        if (!(failure instanceof ViperConfigException)) {
            return false;
        }
        for (Throwable t = failure.getCause(); t != null; t = t.getCause()) {
            if (t instanceof Handshake.Refused r && r.credentials()) {
                return true;
            }
        }
        return Tls.certificateRefused(failure.getCause()).isPresent();
    }

    /**
     * Reads {@code ranges} of the data section of {@code manifest}'s checkpoint from {@code location} into
     * {@code destination}, holding a read lease on the producer for the duration. Blocks until every byte has arrived.
     * The destination is owned by the caller and must not be touched by anyone else until this returns.
     */
    void read(Manifest manifest, Location location, List<ByteRange> ranges, MemorySegment destination);

    /**
     * Like {@link #read(Manifest, Location, List, MemorySegment)}, and tells {@code arrivals} of each piece of the
     * destination as soon as its bytes are final, so that the caller can verify them while the rest is still arriving.
     * The default reads everything, then reports every range; transports that can do better implement
     * {@link ArrivalReporting}.
     */
    default void read(
            Manifest manifest,
            Location location,
            List<ByteRange> ranges,
            MemorySegment destination,
            Arrivals arrivals) {
        read(manifest, location, ranges, destination);
        for (ByteRange r : ranges) {
            arrivals.arrived(r.destinationOffset(), r.length());
        }
    }

    /** Whether {@link #read(Manifest, Location, List, MemorySegment, Arrivals)} reports pieces before the read ends. */
    default boolean reportsArrivals() {
        return false;
    }

    /**
     * Like {@link #read}, but into GPU memory: {@code destination} is a device buffer owned by the caller. GPU-tier
     * transports implement it; the default throws a {@link io.viper.errors.ViperUnsupportedException} naming the
     * transport.
     */
    default void readToDevice(Manifest manifest, Location location, List<ByteRange> ranges, DeviceBuffer destination) {
        throw new io.viper.errors.ViperUnsupportedException(location.scheme() + ":// cannot write into GPU memory");
    }

    /**
     * Where the transport can expose the data section in place without a copy (a memory-mapped file on the PFS),
     * returns it; the caller owns the result and closes it. Default: empty.
     */
    default Optional<MappedData> map(Manifest manifest, Location location) {
        return Optional.empty();
    }

    /**
     * Asks the producer at {@code producer} where to read {@code manifest}'s version from (its tracker, see
     * {@link SourceTracker}): the locations of one relay that holds or is receiving it, or an empty list for the
     * producer itself. {@code relay} are this consumer's own relay locations (empty when it relays nothing): it tells
     * the tracker it will serve the version too. {@code failed} are relays that failed this read, which the tracker
     * drops as sources of the version. Returns empty when this transport has no tracker request. Blocks for one round
     * trip; throws as {@link #read} does.
     */
    default Optional<List<URI>> askSources(Manifest manifest, Location producer, List<URI> relay, List<URI> failed) {
        return Optional.empty();
    }

    @Override
    void close();

    /**
     * Told of destination ranges whose bytes are final during a read. Called on the reading thread or on a thread of
     * the transport's own (a completion thread), once per range, in any order; it must return quickly and must not call
     * the transport.
     */
    @FunctionalInterface
    interface Arrivals {
        /** Arrivals nobody waits for. */
        Arrivals NONE = (destinationOffset, length) -> {};

        void arrived(long destinationOffset, long length);

        /**
         * For a transport that reads the producer's memory in place (shared memory mapped into this process): copies
         * {@code source} into {@code destination}, the slice of the read's destination that starts
         * {@code destinationOffset} bytes into it, and reports those bytes arrived. Returns when every byte is copied;
         * unlike {@link #arrived} it may take as long as the copy, and the calling thread must be the reading thread.
         * The default copies on the calling thread, then reports; a reader that checks what arrives may split the copy
         * over threads of its own, each hashing what it just copied while the bytes are still in its processor's cache
         * (one pass over memory where copy and check would make two). Both segments are the caller's for the call.
         *
         * @throws IllegalArgumentException when the two sizes differ
         */
        default void copy(MemorySegment source, MemorySegment destination, long destinationOffset) {
            if (source.byteSize() != destination.byteSize()) {
                throw new IllegalArgumentException(
                        "copy of " + source.byteSize() + " bytes into " + destination.byteSize());
            }
            MemorySegment.copy(source, 0, destination, 0, source.byteSize());
            arrived(destinationOffset, source.byteSize());
        }
    }

    /**
     * A client that reports pieces as they land: it implements the read with {@link Arrivals}, and the plain read is
     * that read with {@link Arrivals#NONE}.
     */
    interface ArrivalReporting extends TransportClient {
        @Override
        void read(
                Manifest manifest,
                Location location,
                List<ByteRange> ranges,
                MemorySegment destination,
                Arrivals arrivals);

        @Override
        default void read(Manifest manifest, Location location, List<ByteRange> ranges, MemorySegment destination) {
            read(manifest, location, ranges, destination, Arrivals.NONE);
        }

        @Override
        default boolean reportsArrivals() {
            return true;
        }
    }

    /** A data section mapped in place; valid until {@link #close()}. */
    interface MappedData extends AutoCloseable {
        /** The checkpoint's data section (tensors at their manifest offsets), read-only. */
        MemorySegment data();

        /**
         * Brings the data section into memory, telling {@code arrivals} of each range (offsets in the data section) as
         * soon as it is in, so that the caller checks it while the rest is read; returns when every byte was reported.
         * Reading {@link #data()} without it is correct too, only slower for a cold file (pages fault in one by one).
         * Once, by the thread that mapped. Default: it is in memory; everything is reported at once.
         */
        default void populate(Arrivals arrivals) {
            arrivals.arrived(0, data().byteSize());
        }

        @Override
        void close();
    }
}
