package io.viper.spi;

import io.viper.manifest.Location;
import java.util.Optional;

/**
 * Producer side of a transport: serves staged checkpoints to consumers that hold a read lease.
 *
 * <p>Created by {@link TransportProvider#openServer}; owned and closed by the producer. {@code expose} is called from
 * the producer's background thread, {@code withdraw} from its withdrawal thread; implementations serve requests on
 * their own threads.
 */
public interface TransportServer extends AutoCloseable {
    /** Where consumers reach this server (the bound port resolved), e.g. {@code ucx://127.0.0.1:40123}. */
    Location location();

    /** Makes {@code staged} readable by consumers (e.g. registers its memory for RDMA). */
    void expose(StagedCheckpoint staged);

    /**
     * Stops serving that version and frees what {@link #expose} allocated or registered for it. Called once the version
     * retired and every read lease on it is closed, before the staging cache recycles the buffer; from the moment it
     * retired, {@link StagedCheckpoint#tryLease()} already refuses new leases, so no read can be running when this is
     * called.
     */
    void withdraw(StagedCheckpoint staged);

    /**
     * Where this transport wants the producer's staging buffers to live, if anywhere special (UCX: memory it allocated
     * and registered once). Default: none, the producer allocates its own.
     */
    default Optional<StagingAllocator> stagingAllocator() {
        return Optional.empty();
    }

    /**
     * Whether this server streams a version only as far as it is {@linkplain StagedCheckpoint#readable readable},
     * waiting for the rest: then a relaying consumer exposes a version it is still receiving. Default false: such a
     * server is given a relayed version only once it is whole and verified (UCX, whose readers read the memory without
     * asking).
     */
    default boolean waitsForReadable() {
        return false;
    }

    /**
     * Installs the producer's tracker ({@link SourceTracker}), which this server consults when a reader asks where to
     * read a version from ({@link TransportClient#askSources}). Called once, before the first version is exposed.
     * Default: the transport has no such request, and its readers read from it.
     */
    default void track(SourceTracker tracker) {}

    /** Stops serving; open transfers fail on the consumer side with a retriable error. */
    @Override
    void close();
}
