package io.viper.cli.bench;

import io.viper.Snapshot;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Makes a benchmark model change between versions as training would: a fraction of its blocks gets new bytes (one
 * 8-byte word each, which changes the block's id), the rest stays as it was. Which blocks change is drawn anew for each
 * version, from a fixed seed. It remembers where it wrote since the last snapshot was described, for a snapshot that
 * declares its changes ({@link #writtenIn}). One thread.
 */
final class ModelChanges {
    private static final int WORD = Long.BYTES;
    private final long blockBytes;
    private final SplittableRandom rnd = new SplittableRandom(7);
    /** Where a word was written since {@link #described()}, in the order written. */
    private long[] written = new long[64];

    private int writtenCount;

    /**
     * @param blockBytes the producer's {@code viper.block.bytes} (the grid the changes fall on; 0 is taken as 1 MiB)
     */
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
        long at = Math.max(0, Math.min(block * blockBytes + WORD, model.byteSize() - WORD));
        model.set(ValueLayout.JAVA_LONG_UNALIGNED, at, rnd.nextLong());
        if (writtenCount == written.length) {
            written = Arrays.copyOf(written, 2 * written.length);
        }
        written[writtenCount++] = at;
    }

    /**
     * The words written since {@link #described()} into model bytes {@code [offset, offset + length)}, relative to
     * {@code offset}.
     */
    Snapshot.Changes writtenIn(long offset, long length) {
        long[] bounds = new long[2 * writtenCount];
        int n = 0;
        for (int i = 0; i < writtenCount; i++) {
            long from = Math.max(written[i], offset);
            long to = Math.min(written[i] + WORD, offset + length);
            if (from < to) {
                bounds[n++] = from - offset;
                bounds[n++] = to - offset;
            }
        }
        return Snapshot.Changes.ofBounds(Arrays.copyOf(bounds, n));
    }

    /** A snapshot was described: what was written so far is published. */
    void described() {
        writtenCount = 0;
    }
}
