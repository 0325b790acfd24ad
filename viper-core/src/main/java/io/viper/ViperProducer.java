package io.viper;

import io.viper.tensor.Checkpoint;
import java.util.Map;
import java.util.Optional;

/**
 * The hook in a training loop: one per model and producer. Obtained from {@link Viper#producer}; closed by the caller
 * (or with its {@code Viper}).
 *
 * <p>Threading: {@link #step} and {@link #publish} are called from the training thread (one thread at a time). The only
 * work they do on that thread is the copy into a staging buffer; hashing, registering memory with the transports,
 * announcing and the PFS flush run in the background. The exception is a version small enough to travel inside its
 * announcement ({@code viper.producer.inline.bytes}) when the broker runs in this process and nothing is queued: it is
 * hashed and announced on the calling thread, which costs less than waking the background one, and
 * {@link PublishHandle#stallNanos()} counts it.
 */
public interface ViperProducer extends AutoCloseable {
    String model();

    /**
     * Reports iteration {@code iteration} with training loss {@code loss}. When the policy says this iteration
     * publishes, {@code snapshot} is asked for the tensors, they are copied into staging and the handle of the new
     * version is returned; otherwise the snapshot is not touched.
     *
     * @throws io.viper.errors.ViperConfigException if iterations do not increase
     */
    Optional<PublishHandle> step(long iteration, double loss, Snapshot snapshot);

    /** Publishes {@code checkpoint} now, as the next version (its own version number is ignored). */
    PublishHandle publish(Checkpoint checkpoint);

    /**
     * Publishes the tensors of {@code snapshot} now, with {@code metadata}, as the next version.
     *
     * @throws io.viper.errors.ViperConfigException for a bad snapshot, or metadata with a null key or value (nothing is
     *     staged and no version is used)
     * @throws NullPointerException for a null snapshot or metadata (likewise before anything is staged)
     */
    PublishHandle publish(Snapshot snapshot, Map<String, String> metadata);

    /** The newest version published (0 before the first). */
    long latestVersion();

    /** Waits until every publish so far is announced and, with a PFS, durable. */
    void flush();

    /** Flushes, withdraws staged versions, closes the transport servers it started. */
    @Override
    void close();
}
