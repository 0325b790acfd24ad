package io.viper.spi;

import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;

/**
 * A version on its way into a {@link CheckpointRepository} while its block ids are still being computed
 * ({@link CheckpointRepository#begin}): the producer names each block as soon as its id is known
 * ({@link #blockHashed}), and the repository may write it at once, so that the flush overlaps the hashing instead of
 * following it. {@link #store} then stores the version as {@link CheckpointRepository#store} does, using what was
 * written; nothing becomes visible before it, and the crash protocol is the repository's as ever.
 *
 * <p>The producer owns the data section given to {@code begin}: it stays allocated and unchanged until {@link #close()}
 * returned. Threads: {@link #blockHashed} from any thread (the hash pool's), quick and never throwing (a failed early
 * write is the repository's to recover from in {@link #store}); {@link #store} and {@link #close} from the producer's
 * publishing thread, after the last {@link #blockHashed}.
 */
public interface PendingStore extends AutoCloseable {
    /** Bytes {@code [offset, offset + length)} of the data section are final and form the block with id {@code id}. */
    void blockHashed(long offset, long length, ContentHash id);

    /**
     * Stores the version as {@link CheckpointRepository#store} does, with what was written early; the caller holds a
     * read lease on {@code staged} (whose data is the section {@code begin} was given).
     */
    Location store(Manifest manifest, StagedCheckpoint staged);

    /**
     * Waits for the writes still running and removes what was written early and not stored (all of it when
     * {@link #store} was not called or failed); after a store, does what the repository leaves for after the
     * announcement (the PFS: deleting the versions its retention drops). Idempotent.
     */
    @Override
    void close();

    /** Writes nothing early: {@link #store} is {@code repository}'s. */
    static PendingStore nothingEarly(CheckpointRepository repository) {
        return new PendingStore() {
            @Override
            public void blockHashed(long offset, long length, ContentHash id) {}

            @Override
            public Location store(Manifest manifest, StagedCheckpoint staged) {
                return repository.store(manifest, staged);
            }

            @Override
            public void close() {}
        };
    }
}
