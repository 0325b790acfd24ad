package io.viper.manifest;

import io.viper.hash.ContentHash;
import io.viper.tensor.TensorInfo;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * A tensor of a manifest: its layout in the checkpoint data, the hash of its bytes (CRC32C, or
 * XXH3-128 in format 1 manifests; {@link ContentHash#algorithm()} says which), and,
 * when the producer offers GPU locations, the {@link io.viper.hash.ParallelHash64} of its bytes
 * (what GPU consumers verify on the device).
 *
 * @param info    name, dtype, shape, offset and length
 * @param hash    the hash of the bytes (consumers verify this before a swap)
 * @param phash64 ParallelHash64 of the bytes, or empty when the producer did not compute it
 */
public record TensorEntry(TensorInfo info, ContentHash hash, OptionalLong phash64) {
    public TensorEntry {
        Objects.requireNonNull(info, "info");
        Objects.requireNonNull(hash, "hash");
        Objects.requireNonNull(phash64, "phash64");
    }

    /** An entry without a GPU hash. */
    public TensorEntry(TensorInfo info, ContentHash hash) {
        this(info, hash, OptionalLong.empty());
    }

    public String name() {
        return info.name();
    }
}
