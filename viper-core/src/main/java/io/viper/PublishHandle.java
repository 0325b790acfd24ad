package io.viper;

import io.viper.manifest.Manifest;
import java.util.concurrent.CompletableFuture;

/**
 * The result of one publish: the version it got, the training stall it cost (the copy into the
 * staging buffer), and a future completed once the manifest was announced (or failed). A separate
 * future completes when the PFS flush is durable (immediately when no PFS is configured).
 * Immutable; the futures may be waited on from any thread.
 */
public record PublishHandle(String model, long version, long stallNanos,
                            CompletableFuture<Manifest> announced, CompletableFuture<Manifest> durable) {
}
