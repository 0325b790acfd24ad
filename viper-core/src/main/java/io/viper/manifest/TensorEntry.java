package io.viper.manifest;

import io.viper.errors.ViperConfigException;
import io.viper.hash.ContentHash;
import io.viper.tensor.TensorInfo;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * A tensor of a manifest: its layout in the checkpoint data, the hash of its bytes (CRC32C, or XXH3-128 in format 1
 * manifests; {@link ContentHash#algorithm()} says which), and, when the producer offers GPU locations, the
 * {@link io.viper.hash.ParallelHash64} of its bytes (what GPU consumers verify on the device), and from format 3 on its
 * content-addressed {@link BlockList blocks}.
 *
 * @param info name, dtype, shape, offset and length
 * @param hash the hash of the bytes (consumers verify this before a swap)
 * @param phash64 ParallelHash64 of the bytes, or empty when the producer did not compute it
 * @param blocks the tensor's blocks, {@link BlockList#NONE} when the producer did not cut it
 */
public record TensorEntry(TensorInfo info, ContentHash hash, OptionalLong phash64, BlockList blocks) {
    /** Checks that the blocks cover exactly the tensor's bytes. */
    public TensorEntry {
        Objects.requireNonNull(info, "info");
        Objects.requireNonNull(hash, "hash");
        Objects.requireNonNull(phash64, "phash64");
        Objects.requireNonNull(blocks, "blocks");
        if (!blocks.isEmpty() && blocks.ids().size() != BlockList.count(info.length(), blocks.blockBytes())) {
            throw new ViperConfigException("tensor '" + info.name() + "' of " + info.length() + " bytes has "
                    + blocks.ids().size() + " blocks of " + blocks.blockBytes() + " bytes, expected "
                    + BlockList.count(info.length(), blocks.blockBytes()));
        }
    }

    /** An entry without blocks. */
    public TensorEntry(TensorInfo info, ContentHash hash, OptionalLong phash64) {
        this(info, hash, phash64, BlockList.NONE);
    }

    /** An entry without a GPU hash. */
    public TensorEntry(TensorInfo info, ContentHash hash) {
        this(info, hash, OptionalLong.empty());
    }

    public String name() {
        return info.name();
    }
}
