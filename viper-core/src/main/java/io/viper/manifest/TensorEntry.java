package io.viper.manifest;

import io.viper.hash.ContentHash;
import io.viper.tensor.TensorInfo;
import java.util.Objects;

/** A tensor of a manifest: its layout in the checkpoint data and the XXH3-128 hash of its bytes. */
public record TensorEntry(TensorInfo info, ContentHash hash) {
    public TensorEntry {
        Objects.requireNonNull(info, "info");
        Objects.requireNonNull(hash, "hash");
    }

    public String name() {
        return info.name();
    }
}
