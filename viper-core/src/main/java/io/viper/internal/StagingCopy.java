package io.viper.internal;

import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.List;

/**
 * The copy of a host snapshot into a staging buffer, the training stall. Each range is reported
 * to the version's {@link TensorHashes} and {@link BlockIds} as soon as it is in, so that the pool
 * hashes it while the copy goes on.
 *
 * <p>When the buffer still holds an earlier version of the same layout ({@link StagedContent}),
 * the copy first compares: the snapshot is taken in units on which both the tensor pieces and the
 * blocks fall ({@link #compareUnit}); a unit equal to the buffer's bytes is neither copied nor
 * hashed (it is reported {@code known}, and the earlier hashes of its pieces and blocks are taken),
 * a unit that differs is copied and reported as arrived. Comparing reads both copies, which costs
 * about what copying does, but the units found equal need no hashing: where few blocks changed the
 * pool stays idle and the announcement follows the stall. Where every unit changed the compare stops
 * at the first differing byte of each.
 *
 * <p>Training thread only; the snapshot's memory is read only during the call.
 */
final class StagingCopy {
    private StagingCopy() {
    }

    /** What one copy did: bytes copied (and hashed), bytes found unchanged (neither). */
    record Copied(long copiedBytes, long unchangedBytes) {
    }

    /**
     * The unit in which a snapshot is compared with the buffer: one that tensor pieces
     * ({@link TensorHashes#PIECE}) and blocks of {@code blockBytes} are both made of, so that a unit
     * never straddles a piece or block boundary; 0 when they have none (block sizes that neither
     * divide nor are a multiple of the piece): then everything is copied.
     */
    static long compareUnit(long blockBytes) {
        long piece = TensorHashes.PIECE;
        if (blockBytes <= 0 || blockBytes % piece == 0) {
            return piece;
        }
        return piece % blockBytes == 0 ? blockBytes : 0;
    }

    /** Whether {@link #changed} can compare {@code t} (float arrays only where their bytes are little-endian in memory). */
    static boolean comparable(SnapshotTensor t) {
        return !t.onDevice() && (t.segment() != null || ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN);
    }

    /** Copies everything, a piece of {@link TensorHashes#PIECE} bytes at a time, each piece reported as it is in. */
    static Copied all(List<SnapshotTensor> tensors, List<TensorInfo> infos, MemorySegment dst, GpuStaging.Arrivals arrivals) {
        long total = 0;
        for (int i = 0; i < tensors.size(); i++) {
            TensorInfo info = infos.get(i);
            SnapshotTensor t = tensors.get(i);
            for (long done = 0; done < info.length(); done += TensorHashes.PIECE) {
                long n = Math.min(TensorHashes.PIECE, info.length() - done);
                t.copyTo(dst, info.offset(), done, n);
                arrivals.arrived(info.offset() + done, n);
            }
            total += info.length();
        }
        return new Copied(total, 0);
    }

    /**
     * Copies the units that differ from what {@code dst} holds and reports the others as known: runs
     * of equal or of differing units are reported together, up to a piece at a time.
     *
     * @param unit {@link #compareUnit}, not 0; every tensor {@link #comparable}
     */
    static Copied changed(List<SnapshotTensor> tensors, List<TensorInfo> infos, MemorySegment dst, long unit, TensorHashes hashes, BlockIds blocks) {
        long[] copiedAndUnchanged = new long[2];
        for (int i = 0; i < tensors.size(); i++) {
            TensorInfo info = infos.get(i);
            SnapshotTensor t = tensors.get(i);
            MemorySegment src = t.segment() != null ? t.segment() : MemorySegment.ofArray(t.floats());
            long off = info.offset();
            long len = info.length();
            long runStart = 0;
            boolean runEqual = false;
            for (long pos = 0; pos < len; pos += unit) {
                long n = Math.min(unit, len - pos);
                boolean equal = MemorySegment.mismatch(src, pos, pos + n, dst, off + pos, off + pos + n) == -1;
                if (pos > runStart && (equal != runEqual || pos - runStart >= TensorHashes.PIECE)) {
                    run(runEqual, t, dst, off, runStart, pos - runStart, hashes, blocks, copiedAndUnchanged);
                    runStart = pos;
                }
                runEqual = equal;
            }
            if (len > runStart) {
                run(runEqual, t, dst, off, runStart, len - runStart, hashes, blocks, copiedAndUnchanged);
            }
        }
        return new Copied(copiedAndUnchanged[0], copiedAndUnchanged[1]);
    }

    /** Bytes {@code [from, from + n)} of tensor {@code t}, at {@code offset} in the data: reported known when equal, else copied and reported. */
    private static void run(boolean equal, SnapshotTensor t, MemorySegment dst, long offset, long from, long n, TensorHashes hashes, BlockIds blocks,
                            long[] copiedAndUnchanged) {
        if (equal) {
            hashes.known(offset + from, n);
            blocks.known(offset + from, n);
            copiedAndUnchanged[1] += n;
        } else {
            t.copyTo(dst, offset, from, n);
            hashes.arrived(offset + from, n);
            blocks.arrived(offset + from, n);
            copiedAndUnchanged[0] += n;
        }
    }
}
