package io.viper.hash;

import io.viper.errors.ViperConfigException;
import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * The algorithms a manifest may name for a tensor's {@link ContentHash}, each with its field name in the manifest and
 * the length of its text form.
 *
 * <ul>
 *   <li>{@link #CRC32C}: the Castagnoli CRC ({@link Crc32c}), what producers write by default. The JDK computes it with
 *       the processor's CRC instructions at about the speed of a memory copy, and the CRCs of pieces combine into the
 *       CRC of the whole, so a large tensor is checked by several threads at once, while it arrives. It detects
 *       transfer corruption, as CRC32C does for iSCSI, ext4 and Kafka's record batches.
 *   <li>{@link #XXH3_128}: XXH3-128 ({@link Xxh3}), what manifests of format 1 carry. Sequential per tensor and about a
 *       quarter of CRC32C's speed here; still written on request ({@code viper.hash.algorithm=xxh3_128}) for consumers
 *       that only read format 1.
 * </ul>
 */
public enum HashAlgorithm {
    /** CRC32C (Castagnoli), 8 hex digits; manifest field {@code crc32c}. */
    CRC32C("crc32c", 8),
    /** XXH3-128, 32 hex digits; manifest field {@code xxh3_128}. */
    XXH3_128("xxh3_128", 32);

    private final String fieldName;
    private final int hexLength;

    HashAlgorithm(String fieldName, int hexLength) {
        this.fieldName = fieldName;
        this.hexLength = hexLength;
    }

    /** The name of the tensor field that carries it in a manifest, and in configuration. */
    public String fieldName() {
        return fieldName;
    }

    /** Hex digits of its text form. */
    public int hexLength() {
        return hexLength;
    }

    /** Whether the hashes of consecutive pieces combine into the hash of the whole ({@link #combine}). */
    public boolean combinable() {
        return this == CRC32C;
    }

    /** The hash of {@code data}, on the calling thread. */
    public ContentHash hash(MemorySegment data) {
        return switch (this) {
            case CRC32C -> ContentHash.crc32c(Crc32c.compute(data));
            case XXH3_128 -> Xxh3.hash128(data);
        };
    }

    /**
     * The hash of the bytes of {@code first} followed by {@code lengthOfSecond} bytes hashing to {@code second}.
     *
     * @throws UnsupportedOperationException for an algorithm that does not combine
     */
    public ContentHash combine(ContentHash first, ContentHash second, long lengthOfSecond) {
        if (this != CRC32C) {
            throw new UnsupportedOperationException(this + " hashes do not combine");
        }
        return ContentHash.crc32c(Crc32c.combine((int) first.low(), (int) second.low(), lengthOfSecond));
    }

    /** The algorithm named {@code name} ({@code crc32c} or {@code xxh3_128}, any case). */
    public static HashAlgorithm named(String name) {
        for (HashAlgorithm a : values()) {
            if (a.fieldName.equals(name.strip().toLowerCase(Locale.ROOT))) {
                return a;
            }
        }
        throw new ViperConfigException("unknown hash algorithm '" + name + "' (use crc32c or xxh3_128)");
    }
}
