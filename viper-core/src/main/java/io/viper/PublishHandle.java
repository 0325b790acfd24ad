package io.viper;

import io.viper.manifest.Manifest;
import java.util.concurrent.CompletableFuture;

/**
 * The result of one publish: the version it got, the training stall it cost (the copy into the staging buffer, and for
 * a small version announced on the calling thread the announcement: see {@link ViperProducer}), and a future completed
 * once the manifest was announced (or failed). A separate future completes when the PFS flush is durable (immediately
 * when no PFS is configured). Immutable; the futures may be waited on from any thread.
 *
 * @param copiedBytes bytes the stall copied into staging and the producer hashed
 * @param unchangedBytes bytes found equal to what the staging buffer held from an earlier version
 *     ({@code viper.producer.staging.compare}): neither copied nor hashed
 */
public record PublishHandle(
        String model,
        long version,
        long stallNanos,
        CompletableFuture<Manifest> announced,
        CompletableFuture<Manifest> durable,
        long copiedBytes,
        long unchangedBytes) {
    /** A handle whose copied and unchanged bytes are unknown (-1). */
    public PublishHandle(
            String model,
            long version,
            long stallNanos,
            CompletableFuture<Manifest> announced,
            CompletableFuture<Manifest> durable) {
        this(model, version, stallNanos, announced, durable, -1, -1);
    }
}
