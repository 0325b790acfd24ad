/**
 * Hashes of tensors, by {@link io.viper.hash.HashAlgorithm}: {@link io.viper.hash.Crc32c} computes CRC32C (the JDK's
 * hardware CRC) and combines the CRCs of pieces; {@link io.viper.hash.Xxh3} computes XXH3-128 (xxHash's
 * {@code XXH3_128bits}, seed 0, default secret), both over {@link java.lang.foreign.MemorySegment}s on or off the Java
 * heap; {@link io.viper.hash.ContentHash} holds either and prints it as the usual tools do ({@code xxhsum -H2} for
 * XXH3-128).
 */
package io.viper.hash;
