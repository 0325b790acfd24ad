package io.viper.cli.bench;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/**
 * Makes a benchmark model change between versions as training would: a fraction of its blocks
 * gets new bytes (one 8-byte word each, which changes the block's id), the rest stays as it was.
 * Which blocks change is drawn anew for each version, from a fixed seed. One thread.
 */
final class ModelChanges {
    private final long blockBytes;
    private final SplittableRandom rnd = new SplittableRandom(7);

    /** @param blockBytes the producer's {@code viper.block.bytes} (the grid the changes fall on; 0 is taken as 1 MiB) */
    ModelChanges(long blockBytes) {
        this.blockBytes = blockBytes > 0 ? blockBytes : 1L << 20;
    }

    /** Changes {@code fraction} (0 to 1) of the blocks of {@code model}, at least one, in place. */
    void change(MemorySegment model, double fraction) {
        long blocks = (model.byteSize() + blockBytes - 1) / blockBytes;
        long n = Math.max(1, Math.round(fraction * blocks));
        if (n >= blocks) {
            for (long b = 0; b < blocks; b++) {
                touch(model, b);
            }
            return;
        }
        for (long i = 0; i < n; i++) {
            touch(model, rnd.nextLong(blocks));
        }
    }

    private void touch(MemorySegment model, long block) {
        long at = Math.min(block * blockBytes + 8, model.byteSize() - 8);
        model.set(ValueLayout.JAVA_LONG_UNALIGNED, Math.max(0, at), rnd.nextLong());
    }
}
