package io.viper.manifest;

import io.viper.errors.ViperConfigException;
import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.hash.Xxh3;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * A tensor cut into content-addressed blocks: every {@code blockBytes} bytes from the tensor's start (the last block
 * shorter), each named by the XXH3-128 of its bytes. Equal bytes give equal ids in every version and model, so a
 * consumer that holds a block with an id need not fetch it again, and the PFS repository stores it once.
 *
 * <p>Why XXH3-128 and not CRC32C: a consumer copies a block it already holds by its id without reading the wire, so two
 * different blocks must never share one. 128 bits make an accidental collision among even 10^12 blocks about 10^-15
 * likely (CRC32C's 32 bits collide among 10^5); SHA-256 would also resist a producer crafting collisions on purpose,
 * but hashes about three times slower here, and a producer can publish any bytes it likes anyway. The tensor hash is
 * still checked over the assembled bytes before a swap, whatever the blocks say.
 *
 * <p>Immutable and thread-safe.
 *
 * @param blockBytes the block size; 0 for a tensor without blocks ({@link #NONE})
 * @param ids the id of each block, in order
 */
public record BlockList(long blockBytes, List<ContentHash> ids) {
    /** The algorithm of block ids. */
    public static final HashAlgorithm ID_ALGORITHM = HashAlgorithm.XXH3_128;
    /** No blocks: the manifest (an older producer's, or blocks switched off) does not cut tensors. */
    public static final BlockList NONE = new BlockList(0, List.of());

    /** Checks the ids' algorithm and that a list without a block size has no ids. */
    public BlockList {
        ids = List.copyOf(ids);
        if (blockBytes < 0 || (blockBytes == 0 && !ids.isEmpty())) {
            throw new ViperConfigException("blocks of " + blockBytes + " bytes cannot carry " + ids.size() + " ids");
        }
        for (ContentHash id : ids) {
            if (Objects.requireNonNull(id, "block id").algorithm() != ID_ALGORITHM) {
                throw new ViperConfigException("block ids are " + ID_ALGORITHM.fieldName() + ", not "
                        + id.algorithm().fieldName());
            }
        }
    }

    /** Whether the tensor has no blocks. */
    public boolean isEmpty() {
        return blockBytes == 0;
    }

    /** How many blocks of {@code blockBytes} a tensor of {@code length} bytes has (0 for an empty tensor). */
    public static int count(long length, long blockBytes) {
        return blockBytes <= 0 ? 0 : Math.toIntExact((length + blockBytes - 1) / blockBytes);
    }

    /** Where block {@code j} starts, counted from the tensor's first byte. */
    public long start(int j) {
        return j * blockBytes;
    }

    /** The length of block {@code j} of a tensor of {@code tensorLength} bytes. */
    public long length(int j, long tensorLength) {
        return Math.min(blockBytes, tensorLength - start(j));
    }

    /** The id of a block with these bytes, on the calling thread. */
    public static ContentHash idOf(MemorySegment bytes) {
        return Xxh3.hash128(bytes);
    }
}
