package io.viper.spi;

import io.viper.errors.ViperException;
import io.viper.manifest.Manifest;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * Publish/subscribe of manifests, keyed by model name (the embedded and Kafka wire formats are in
 * docs/architecture.md#wire-protocols).
 *
 * <p>Contract every implementation passes (the notifier conformance suite checks it):
 *
 * <ul>
 *   <li>A subscriber receives the latest manifest of its model at once (if any was published), then every newer one, in
 *       publication order.
 *   <li>Malformed input from the network is logged and skipped; it never reaches a listener and never stops delivery of
 *       well-formed manifests.
 *   <li>{@code publish} of the same version again (with more locations) is delivered too: consumers use it to learn the
 *       PFS location once the flush completed.
 * </ul>
 *
 * Thread-safe. Listeners are called on the notifier's own thread, one at a time per subscription, and must not block
 * for long. Implementations keep the subscriber half of this contract by feeding what they receive to an
 * {@link AnnouncementFeed}.
 */
public interface Notifier extends AutoCloseable {
    /** The notifier's address with any port 0 resolved, usable by consumers in other processes. */
    URI uri();

    /**
     * Announces {@code manifest}. Blocks until the notifier accepted it (the embedded broker or the Kafka leader
     * acknowledged it). Throws a retriable exception when the broker is unreachable, and a
     * {@link io.viper.errors.ViperConfigException} when it refuses the manifest because it holds a newer version of the
     * model (versions must grow).
     */
    void publish(Manifest manifest);

    /** Most bytes a version may carry inside its announcement ({@link #publish(Manifest, MemorySegment)}). */
    int MAX_INLINE_BYTES = 1 << 20;

    /**
     * Announces {@code manifest} with the version's bytes attached, so that consumers need not fetch a small version: a
     * subscriber receives both ({@link ManifestListener#onManifest(Manifest, MemorySegment)}). {@code data} holds the
     * {@code manifest.totalBytes()} bytes of the version in data order, at most {@link #MAX_INLINE_BYTES}; it is read
     * before this returns and stays the caller's. As {@link #publish(Manifest)} otherwise. Default: announces the
     * manifest alone, for a notifier that cannot carry bytes (consumers then fetch them).
     *
     * @throws IllegalArgumentException when {@code data} is not {@code manifest.totalBytes()} long or longer than
     *     {@link #MAX_INLINE_BYTES}
     */
    default void publish(Manifest manifest, MemorySegment data) {
        checkInline(manifest, data);
        publish(manifest);
    }

    /**
     * {@link #checkInline} and a copy of {@code data}'s bytes, for an implementation that sends them on after
     * {@link #publish(Manifest, MemorySegment)} returned ({@code data} stays the caller's).
     */
    static byte[] inlineBytes(Manifest manifest, MemorySegment data) {
        checkInline(manifest, data);
        return data.toArray(ValueLayout.JAVA_BYTE);
    }

    /** The checks of {@link #publish(Manifest, MemorySegment)}'s arguments, for implementations. */
    static void checkInline(Manifest manifest, MemorySegment data) {
        if (data.byteSize() != manifest.totalBytes() || data.byteSize() > MAX_INLINE_BYTES) {
            throw new IllegalArgumentException("inline data of " + manifest.model() + " v" + manifest.version() + ": "
                    + data.byteSize() + " bytes for a version of " + manifest.totalBytes() + " (at most "
                    + MAX_INLINE_BYTES + " travel inline)");
        }
    }

    /**
     * Whether the service that accepts publications lives in this process (an embedded broker this notifier started),
     * so that {@link #publishLocally} hands one over without waiting on a network. A producer then announces a small
     * version from the publishing thread rather than waking its background thread. Default: false.
     */
    default boolean publishesLocally() {
        return false;
    }

    /**
     * Only where {@link #publishesLocally()}: hands the announcement of {@code manifest} with {@code data} (as
     * {@link #publish(Manifest, MemorySegment)} takes them, read before this returns) to the service in this process
     * and returns at once. The future completes, on the service's thread, when the publication was accepted, or
     * exceptionally with what {@code publish} would throw; the service handles publications in the order they were
     * handed over.
     *
     * @throws UnsupportedOperationException where {@link #publishesLocally()} is false (the default)
     */
    default CompletableFuture<Void> publishLocally(Manifest manifest, MemorySegment data) {
        throw new UnsupportedOperationException(getClass().getName() + " does not publish within this process");
    }

    /**
     * The newest version of {@code model} announced through this notifier, so that a starting producer numbers its
     * versions after it (docs/architecture.md#versions): 0 when none was. Empty when this notifier cannot know, because
     * it holds no history that consumers may have seen (an embedded broker this producer just started on a fixed port,
     * which consumers of an earlier producer may still follow). Blocks up to {@code viper.notify.timeout.ms}; empty as
     * well when the service does not answer in time. Default: empty.
     */
    default OptionalLong latestVersion(String model) {
        return OptionalLong.empty();
    }

    /** Subscribes to {@code model}; close the returned subscription to stop. */
    Subscription subscribe(String model, ManifestListener listener);

    @Override
    void close();

    /** Receives manifests of one model. */
    interface ManifestListener {
        void onManifest(Manifest manifest);

        /**
         * A manifest announced with the version's bytes ({@link Notifier#publish(Manifest, MemorySegment)}).
         * {@code data} is a read-only heap segment the listener may keep; it is as the producer sent it and unverified:
         * check it against the manifest's hashes before using it. Default: the manifest alone
         * ({@link #onManifest(Manifest)}).
         */
        default void onManifest(Manifest manifest, MemorySegment data) {
            onManifest(manifest);
        }

        /**
         * Whether this listener returns at once and never blocks, so that a notifier may call it on its I/O thread
         * rather than hand the manifest to a thread of its own first (one thread hand-off less between the announcement
         * and the consumer's fetch). Default: false.
         */
        default boolean quick() {
            return false;
        }

        /**
         * A problem the subscription survived (malformed record skipped, broker unreachable and being retried); for
         * logs and metrics. Default: ignore.
         */
        default void onProblem(String problem) {}

        /**
         * The subscription ended for a reason trying again cannot fix (the broker refused this client's credentials, or
         * its TLS does not match this client's): nothing more arrives. Called at most once; the subscription still
         * wants closing. Default: ignore.
         */
        default void onFailure(ViperException failure) {}
    }

    /** An active subscription. {@link #close()} is idempotent. */
    interface Subscription extends AutoCloseable {
        @Override
        void close();
    }
}
