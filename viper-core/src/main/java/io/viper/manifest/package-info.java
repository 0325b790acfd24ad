/**
 * Manifests: what a notifier announces about a checkpoint (tensor layout and hashes, metadata, locations), and their
 * versioned JSON encoding ({@link io.viper.manifest.ManifestCodec}).
 */
package io.viper.manifest;
