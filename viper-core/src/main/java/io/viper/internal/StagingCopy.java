package io.viper.internal;

import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

/**
 * The copy of a host snapshot into a staging buffer, the training stall. The copy has the memory to
 * itself: what it wrote is reported to the version's {@link TensorHashes} and {@link BlockIds} once
 * it ended, and the pool hashes it then. Hashing beside the copy made the copy of 1 GiB 50% slower
 * here (the two share the memory's bandwidth), and the hashes were done only 5-10% sooner. A
 * compared version that turns out to share units with the buffer's (a delta) reports as it goes:
 * it copies little, and its hashes are then done with the compare. The copy
 * moves {@link #CHUNK} bytes at a time: copies of 1-2 MiB ran 40% slower than one of 1 GiB, copies
 * of 4 MiB and more as fast.
 *
 * <p>When the buffer still holds an earlier version of the same layout ({@link StagedContent}),
 * the copy first compares: the snapshot is taken in units on which both the tensor pieces and the
 * blocks fall ({@link #compareUnit}); a unit equal to the buffer's bytes is neither copied nor
 * hashed (it is reported {@code known}, and the earlier hashes of its pieces and blocks are taken),
 * a unit that differs is copied and reported as arrived. Comparing reads both copies, which costs
 * about what copying does, but the units found equal need no hashing: where few blocks changed the
 * pool has little to do and the announcement follows the stall. Where every unit changed the compare
 * stops at the first differing byte of each.
 *
 * <p>Training thread only; the snapshot's memory is read only during the call.
 */
final class StagingCopy {
    private StagingCopy() {
    }

    /** Most bytes one copy call moves: a safepoint every few milliseconds, and large enough to stream (see the class comment). */
    static final long CHUNK = 16L << 20;

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

    /** Copies everything, {@link #CHUNK} bytes at a time; every tensor is reported once all are in. */
    static Copied all(List<SnapshotTensor> tensors, List<TensorInfo> infos, MemorySegment dst, GpuStaging.Arrivals arrivals) {
        long total = 0;
        for (int i = 0; i < tensors.size(); i++) {
            TensorInfo info = infos.get(i);
            SnapshotTensor t = tensors.get(i);
            for (long done = 0; done < info.length(); done += CHUNK) {
                t.copyTo(dst, info.offset(), done, Math.min(CHUNK, info.length() - done));
            }
            total += info.length();
        }
        for (TensorInfo info : infos) {
            arrivals.arrived(info.offset(), info.length());
        }
        return new Copied(total, 0);
    }

    /**
     * Copies the units that differ from what {@code dst} holds and reports the others as known: runs
     * of equal or of differing units, up to {@link #CHUNK} bytes, are reported together, in data
     * order. They are held back until the copy ended, or until a unit is found equal: from then on
     * the version is a delta whose few copies leave the memory's bandwidth to the hashing, and each
     * run is reported as soon as it is done.
     *
     * @param unit {@link #compareUnit}, not 0; every tensor {@link #comparable}
     */
    static Copied changed(List<SnapshotTensor> tensors, List<TensorInfo> infos, MemorySegment dst, long unit, TensorHashes hashes, BlockIds blocks) {
        Runs runs = new Runs();
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
                if (pos > runStart && (equal != runEqual || pos - runStart >= CHUNK)) {
                    runs.add(runEqual, t, dst, off, runStart, pos - runStart);
                    if (runs.shared) {
                        runs.report(hashes, blocks);
                    }
                    runStart = pos;
                }
                runEqual = equal;
            }
            if (len > runStart) {
                runs.add(runEqual, t, dst, off, runStart, len - runStart);
            }
        }
        runs.report(hashes, blocks);
        return new Copied(runs.copied, runs.unchanged);
    }

    /** The runs of one {@link #changed} copy: differing ones copied at once, reported when {@link #report} is called. */
    private static final class Runs {
        /** Per run not reported yet: offset in the data, length, 1 when equal (known) or 0 when copied; three longs each. */
        private long[] runs = new long[48];
        private int count;
        long copied;
        long unchanged;
        /** Whether a run was equal: the version shares units with the buffer's. */
        boolean shared;

        void add(boolean equal, SnapshotTensor t, MemorySegment dst, long offset, long from, long n) {
            if (equal) {
                unchanged += n;
                shared = true;
            } else {
                t.copyTo(dst, offset, from, n);
                copied += n;
            }
            if (3 * count + 3 > runs.length) {
                runs = Arrays.copyOf(runs, 2 * runs.length);
            }
            runs[3 * count] = offset + from;
            runs[3 * count + 1] = n;
            runs[3 * count + 2] = equal ? 1 : 0;
            count++;
        }

        /** Reports the runs not reported yet, in data order. */
        void report(TensorHashes hashes, BlockIds blocks) {
            for (int r = 0; r < count; r++) {
                long from = runs[3 * r];
                long n = runs[3 * r + 1];
                if (runs[3 * r + 2] == 1) {
                    hashes.known(from, n);
                    blocks.known(from, n);
                } else {
                    hashes.arrived(from, n);
                    blocks.arrived(from, n);
                }
            }
            count = 0;
        }
    }
}
