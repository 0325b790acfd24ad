package io.viper;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The SDK in an inference server: follows one model, pulls every newer version in the background into a free receive
 * buffer (double buffering), verifies it, and swaps it in atomically.
 *
 * <p>Threading: all methods are thread-safe. Inference threads call {@link #current()} per request and close the lease
 * when done. Update listeners run on the consumer's fetch thread, after the swap; they must not block for long.
 *
 * <p>After {@link #close()}, {@link #current()}, {@link #currentIfAny()} and {@link #fetch} throw
 * {@link io.viper.errors.ViperClosedException}, as does {@link #awaitVersion} for a version that had not arrived.
 */
public interface ViperConsumer extends AutoCloseable {
    String model();

    /**
     * A lease on the model serving now; throws {@link io.viper.errors.ViperNotFoundException} before the first one
     * arrived, {@link io.viper.errors.ViperClosedException} once the consumer is closed.
     */
    ModelLease current();

    /** A lease on the model serving now, or empty before the first one arrived. */
    Optional<ModelLease> currentIfAny();

    /** The version serving now (0 before the first). */
    long version();

    /**
     * Registers a listener for every newer manifest announced for the model (before it is loaded; with
     * {@code viper.consumer.autoload=false} nothing is loaded and this is how callers learn of versions to
     * {@link #fetch}). Called on the notifier's thread; must not block.
     */
    void onManifest(Consumer<io.viper.manifest.Manifest> listener);

    /**
     * Registers a listener called after every swap, on the thread that swapped: the consumer's fetch thread, or the
     * notifier's thread for a version that arrived inside its announcement ({@code viper.consumer.inline}). Must not
     * block for long: hand slow work to an executor of your own.
     */
    void onUpdate(Consumer<ModelUpdate> listener);

    /**
     * Registers a listener called once if the consumer stops following the model for a reason trying again cannot fix,
     * with a {@link io.viper.errors.ViperConfigException} that names the peer and the reason: the notifier's broker
     * refused its credentials or its TLS does not match this consumer's (on the notifier's thread), or no location of a
     * version delivered it and one of them refused this consumer's credentials or had its TLS certificate refused
     * ({@link io.viper.spi.TransportClient#refusesConsumer}; on the fetch thread). The fetch thread ending on an
     * {@link Error} (a transport's native library missing, say) stops it too, with a
     * {@link io.viper.errors.ViperException} of reason {@code INTERNAL}. Other failures are retried with backoff.
     * Called at once, on the calling thread, if the consumer already stopped. The consumer keeps serving the version it
     * holds; no newer one arrives. Without a listener the consumer logs the failure.
     */
    void onFailure(Consumer<io.viper.errors.ViperException> listener);

    /**
     * Blocks until version {@code version} or a newer one is serving; returns the version serving.
     *
     * @throws io.viper.errors.ViperTimeoutException when it did not arrive in time
     * @throws io.viper.errors.ViperException of the failure's type when the consumer stopped following the model
     *     ({@link #onFailure})
     */
    long awaitVersion(long version, Duration timeout);

    /**
     * Pulls only the named tensors of {@code version} (which must still be staged by the producer or stored in the
     * PFS), verified against their hashes, without the rest of the model.
     *
     * @throws io.viper.errors.ViperNotFoundException for an unknown version or tensor name
     */
    TensorSet fetch(long version, Set<String> names);

    /** Stops following the model. Leases still open stay valid until they are closed. */
    @Override
    void close();
}
