package io.viper.internal.producer;

import io.viper.hash.ContentHash;
import io.viper.internal.TensorHashes;
import io.viper.manifest.BlockList;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;

/**
 * The producer's block ids of one version ({@link BlockList}), computed like its tensor hashes: each block is hashed on
 * the pool as soon as the copy into staging has reported all its bytes ({@link #arrived}), so that the stall stays a
 * plain copy. Each block is one piece of a {@link TensorHashes} over the blocks, the machinery the tensor hashes use.
 *
 * <p>Withheld ids ({@code viper.producer.block.skip.unshared}): a version compared with an earlier one in its staging
 * buffer holds its blocks' hashing back until the compare finds a range they share ({@link #known}); then everything
 * held back is hashed and the rest follows as it arrives. If the copy ends without one ({@link #copyEnded()}), the
 * version shares nothing a delta could reuse and it goes without block ids, as with {@code viper.block.bytes=0}:
 * hashing every block (XXH3-128, about a quarter of CRC32C's speed) would only delay its announcement.
 *
 * <p>Threads and memory as for {@link TensorHashes}: {@link #arrived} from any thread, ({@link #known} likewise; while
 * ids are withheld, one thread: the compare's), {@link #await()} and {@link #close()} by the owner; the data stays
 * unchanged until {@link #close()}.
 */
final class BlockIds implements AutoCloseable {
    private final List<TensorInfo> tensors;
    private final long blockBytes;
    /** Null without blocks. */
    private final TensorHashes hashes;
    /** Ranges arrived while ids are withheld, as {from, len}; null when they are not (or no longer). */
    private List<long[]> withheld;
    /** Whether the version goes without ids: it shared nothing with the earlier one. */
    private boolean skipped;

    /**
     * @param tensors the version's tensors, contiguous and in data order
     * @param blockBytes {@code viper.block.bytes}; 0: no blocks, nothing is hashed
     * @param before the {@link #ids()} of an earlier version of the same layout and block size, for the blocks reported
     *     {@link #known}; null or empty: none
     * @param withhold whether the ids are withheld until the version shares a range with the earlier one its bytes are
     *     compared with (see the class comment)
     * @param listener told each block's id as soon as it is known (the PFS may write it then)
     */
    BlockIds(
            List<TensorInfo> tensors,
            long blockBytes,
            MemorySegment data,
            ExecutorService pool,
            int workers,
            ContentHash[] before,
            boolean withhold,
            TensorHashes.PieceListener listener) {
        this.tensors = tensors;
        this.blockBytes = blockBytes;
        if (blockBytes <= 0) {
            this.hashes = null;
            return;
        }
        if (before != null && before.length == 0) {
            before = null; // the earlier version went without ids
        }
        this.withheld = withhold ? new ArrayList<>() : null;
        List<TensorInfo> blocks = new ArrayList<>();
        for (TensorInfo t : tensors) {
            for (long start = 0; start < t.length(); start += blockBytes) {
                long len = Math.min(blockBytes, t.length() - start);
                blocks.add(new TensorInfo("block", DType.U8, new long[] {len}, t.offset() + start, len));
            }
        }
        this.hashes = new TensorHashes(
                blocks,
                Collections.nCopies(blocks.size(), BlockList.ID_ALGORITHM),
                data,
                pool,
                workers,
                before,
                listener);
    }

    /** Bytes {@code [from, from + len)} of the data are final. */
    void arrived(long from, long len) {
        if (hashes == null) {
            return;
        }
        if (withheld != null) {
            withheld.add(new long[] {from, len});
        } else {
            hashes.arrived(from, len);
        }
    }

    /**
     * Bytes {@code [from, from + len)} of the data are final and equal to the earlier version's: their blocks keep
     * their ids.
     */
    void known(long from, long len) {
        if (hashes == null) {
            return;
        }
        if (withheld != null) {
            // The version shares bytes with the earlier one: its ids are worth having after all.
            List<long[]> held = withheld;
            withheld = null;
            for (long[] range : held) {
                hashes.arrived(range[0], range[1]);
            }
        }
        hashes.known(from, len);
    }

    /**
     * The copy ended (every byte was reported): ids still withheld are dropped, and the version goes without them.
     * Returns whether it does.
     */
    boolean copyEnded() {
        if (withheld != null) {
            withheld = null;
            skipped = true;
        }
        return skipped;
    }

    /** After {@link #await()}: every block's id, in data order (empty without blocks). */
    ContentHash[] ids() {
        return hashes == null || skipped ? new ContentHash[0] : hashes.pieces();
    }

    /**
     * Every byte is final: the blocks of each tensor, in the order of the tensors (all {@link BlockList#NONE} without
     * ids).
     */
    List<BlockList> await() {
        if (hashes == null || skipped) {
            return Collections.nCopies(tensors.size(), BlockList.NONE);
        }
        ContentHash[] ids = hashes.await();
        List<BlockList> out = new ArrayList<>(tensors.size());
        int next = 0;
        for (TensorInfo t : tensors) {
            int n = BlockList.count(t.length(), blockBytes);
            out.add(new BlockList(blockBytes, Arrays.asList(ids).subList(next, next + n)));
            next += n;
        }
        return out;
    }

    @Override
    public void close() {
        if (hashes != null) {
            hashes.close();
        }
    }
}
