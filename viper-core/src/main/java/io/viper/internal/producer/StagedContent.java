package io.viper.internal.producer;

import io.viper.hash.ContentHash;
import io.viper.internal.TensorHashes;
import io.viper.tensor.TensorInfo;
import java.util.List;

/**
 * What a {@link StagingBuffer} holds once its version's hashes completed: the layout of its tensors, the hash of every
 * piece of them ({@link TensorHashes#pieces()}) and the id of every block ({@link BlockIds#ids()}). A later version of
 * the same producer with the same layout has the same pieces and blocks (the producer's hash algorithm and block size
 * are fixed), so its copy ({@link StagingCopy#changed}) compares the snapshot with the buffer's bytes and takes these
 * hashes for the pieces and blocks that are unchanged instead of hashing them again.
 *
 * <p>Immutable: nobody changes the arrays after construction. Valid only while the buffer's bytes are those of the
 * version hashed: the buffer forgets it as soon as it is taken for another version or given back after a failure.
 *
 * @param version the version it is
 * @param layout the tensors, as laid out in the buffer
 * @param pieces the hash of each piece of the tensors, in data order
 * @param blocks the id of each block, in data order (empty without blocks)
 */
record StagedContent(long version, List<TensorInfo> layout, ContentHash[] pieces, ContentHash[] blocks) {
    StagedContent {
        layout = List.copyOf(layout);
    }

    /** Whether a version laid out as {@code infos} has the same pieces and blocks. */
    boolean sameLayout(List<TensorInfo> infos) {
        return layout.equals(infos);
    }
}
