package io.viper.manifest;

import io.viper.hash.ContentHash;
import io.viper.tensor.TensorInfo;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * A tensor of a manifest: its layout in the checkpoint data, the XXH3-128 hash of its bytes, and,
 * when the producer offers GPU locations, the {@link io.viper.hash.ParallelHash64} of its bytes
 * (what GPU consumers verify on the device).
 *
 * @param info    name, dtype, shape, offset and length
 * @param hash    XXH3-128 of the bytes (host paths verify this)
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
