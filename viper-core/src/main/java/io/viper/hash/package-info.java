/**
 * Content hashes of tensors: {@link io.viper.hash.Xxh3} computes XXH3-128 (xxHash's
 * {@code XXH3_128bits}, seed 0, default secret) over {@link java.lang.foreign.MemorySegment}s, on or
 * off the Java heap, and {@link io.viper.hash.ContentHash} holds and prints the result the way
 * {@code xxhsum -H2} does.
 */
package io.viper.hash;
