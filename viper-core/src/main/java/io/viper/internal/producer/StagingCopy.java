package io.viper.internal.producer;

import io.viper.internal.CopyHelpers;
import io.viper.internal.TensorHashes;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.IntConsumer;

/**
 * The copy of a host snapshot into a staging buffer, the training stall. The copy has the memory to itself: what it
 * wrote is reported to the version's {@link TensorHashes} and {@link BlockIds} once it ended, and the pool hashes it
 * then. Hashing beside the copy made the copy of 1 GiB 50% slower here (the two share the memory's bandwidth), and the
 * hashes were done only 5-10% sooner. A compared version that turns out to share units with the buffer's (a delta)
 * reports as it goes: it copies little, and its hashes are then done with the compare. The copy moves {@link #CHUNK}
 * bytes at a time: copies of 1-2 MiB ran 40% slower than one of 1 GiB, copies of 4 MiB and more as fast.
 *
 * <p>When the buffer still holds an earlier version of the same layout ({@link StagedContent}), the copy first
 * compares: the snapshot is taken in units on which both the tensor pieces and the blocks fall ({@link #compareUnit});
 * a unit equal to the buffer's bytes is neither copied nor hashed (it is reported {@code known}, and the earlier hashes
 * of its pieces and blocks are taken), a unit that differs is copied and reported as arrived. Comparing reads both
 * copies, which costs about what copying does, but the units found equal need no hashing: where few blocks changed the
 * pool has little to do and the announcement follows the stall. Where every unit changed the compare stops at the first
 * differing byte of each. Where the training code declared what changed since the buffer's version
 * ({@link DeclaredChanges}), a unit those ranges do not touch counts as equal unread, so the stall is the copy of the
 * declared units alone; and where it declared what changed since a newer version whose hashes are known (the producer's
 * latest, when the buffer holds an older one), a unit copied because it changed since the buffer's version but
 * untouched since that newer one takes the newer one's hashes: only the units changed since the latest version are
 * hashed.
 *
 * <p>Large copies are shared with {@link CopyHelpers}: one core cannot use the memory's bandwidth.
 *
 * <p>Training thread only; the snapshot's memory is read only during the call.
 */
final class StagingCopy {
    private StagingCopy() {}

    /**
     * Most bytes one copy call moves: a safepoint every few milliseconds, and large enough to stream (see the class
     * comment).
     */
    static final long CHUNK = CopyHelpers.STAGING_PIECE;

    /** What one copy did: bytes copied (and hashed), bytes found unchanged (neither). */
    record Copied(long copiedBytes, long unchangedBytes) {}

    /**
     * The unit in which a snapshot is compared with the buffer: one that tensor pieces ({@link TensorHashes#PIECE}) and
     * blocks of {@code blockBytes} are both made of, so that a unit never straddles a piece or block boundary; 0 when
     * they have none (block sizes that neither divide nor are a multiple of the piece): then everything is copied.
     */
    static long compareUnit(long blockBytes) {
        long piece = TensorHashes.PIECE;
        if (blockBytes <= 0 || blockBytes % piece == 0) {
            return piece;
        }
        return piece % blockBytes == 0 ? blockBytes : 0;
    }

    /**
     * Whether {@link #changed} can compare {@code t} (float arrays only where their bytes are little-endian in memory).
     */
    static boolean comparable(SnapshotTensor t) {
        return !t.onDevice() && (t.segment() != null || ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * Copies everything, {@link CopyHelpers#pieceBytes} ({@link #CHUNK}) bytes at a time, on the training thread and
     * the {@code helpers} where they {@link CopyHelpers#shares share} the copy; every tensor is reported once all are
     * in.
     *
     * @param total the snapshot's bytes, the sum of {@code infos}' lengths
     */
    static Copied all(
            List<SnapshotTensor> tensors,
            List<TensorInfo> infos,
            long total,
            MemorySegment dst,
            GpuStaging.Arrivals arrivals,
            CopyHelpers helpers) {
        Pieces pieces = Pieces.of(infos, helpers.pieceBytes());
        IntConsumer copy = c -> tensors.get(pieces.tensor[c])
                .copyTo(dst, infos.get(pieces.tensor[c]).offset(), pieces.from[c], pieces.length[c]);
        if (helpers.shares(total, tensors, SnapshotTensor::segment)) {
            helpers.run(pieces.count(), copy);
        } else {
            for (int c = 0; c < pieces.count(); c++) {
                copy.accept(c);
            }
        }
        for (TensorInfo info : infos) {
            arrivals.arrived(info.offset(), info.length());
        }
        return new Copied(total, 0);
    }

    /**
     * Copies the units that differ from what {@code dst} holds and reports the others as known: runs of equal or of
     * differing units, up to {@link #CHUNK} bytes, are reported together, in data order. They are held back until the
     * copy ended, or until a unit is found equal: from then on the version is a delta whose few copies leave the
     * memory's bandwidth to the hashing, and each run is reported as soon as it is done. A copy the {@code helpers}
     * share is compared piece by piece on several threads; the training thread reports the ended pieces in data order,
     * after each of its own pieces once one was equal, else when every piece ended.
     *
     * @param unit {@link #compareUnit}, not 0; every tensor {@link #comparable}
     * @param total the snapshot's bytes, the sum of {@code infos}' lengths
     * @param declared per tensor, the merged ranges that may differ from what {@code dst} holds
     *     ({@link DeclaredChanges#since}): a unit they do not touch counts as equal without being read; null: every
     *     unit is compared
     * @param fresh with {@code declared}, per tensor the merged ranges that may differ from the version {@code hashes}
     *     and {@code blocks} take earlier hashes from (inside {@code declared}; the same list when that version is the
     *     buffer's): a unit they do not touch is reported known, copied or not; ignored without {@code declared}
     */
    static Copied changed(
            List<SnapshotTensor> tensors,
            List<TensorInfo> infos,
            long total,
            MemorySegment dst,
            long unit,
            List<long[]> declared,
            List<long[]> fresh,
            TensorHashes hashes,
            BlockIds blocks,
            CopyHelpers helpers) {
        if (helpers.shares(total, tensors, SnapshotTensor::segment)) {
            Pieces pieces = Pieces.of(infos, helpers.pieceBytes());
            int count = pieces.count();
            AtomicReferenceArray<Runs> ended = new AtomicReferenceArray<>(count);
            AtomicBoolean shared = new AtomicBoolean();
            int[] reported = {0}; // pieces reported so far, in data order; the training thread's alone
            // Reports are made on the training thread only (BlockIds takes withheld ranges from one thread).
            Runnable reportEnded = () -> {
                for (Runs r; reported[0] < count && (r = ended.get(reported[0])) != null; reported[0]++) {
                    r.report(hashes, blocks);
                }
            };
            helpers.run(
                    count,
                    c -> {
                        Runs r = new Runs();
                        int i = pieces.tensor[c];
                        compare(
                                tensors.get(i),
                                infos.get(i).offset(),
                                pieces.from[c],
                                pieces.from[c] + pieces.length[c],
                                dst,
                                unit,
                                declared == null ? null : declared.get(i),
                                declared == null ? null : fresh.get(i),
                                r,
                                null,
                                null);
                        if (r.shared) {
                            shared.set(true);
                        }
                        ended.set(c, r);
                    },
                    () -> {
                        if (shared.get()) {
                            reportEnded.run(); // a delta: its few copies are hashed beside the compare
                        }
                    });
            reportEnded.run();
            long copied = 0;
            long unchanged = 0;
            for (int c = 0; c < count; c++) {
                copied += ended.get(c).copied;
                unchanged += ended.get(c).unchanged;
            }
            return new Copied(copied, unchanged);
        }
        Runs runs = new Runs();
        for (int i = 0; i < tensors.size(); i++) {
            compare(
                    tensors.get(i),
                    infos.get(i).offset(),
                    0,
                    infos.get(i).length(),
                    dst,
                    unit,
                    declared == null ? null : declared.get(i),
                    declared == null ? null : fresh.get(i),
                    runs,
                    hashes,
                    blocks);
        }
        runs.report(hashes, blocks);
        return new Copied(runs.copied, runs.unchanged);
    }

    /**
     * Compares bytes {@code [from, to)} of {@code t} ({@code from} a multiple of {@code unit}) with {@code dst} at
     * {@code offset + from}, unit by unit, copying the runs that differ into {@code runs}; with {@code hashes}, the
     * runs are reported as they end once one was equal. With {@code changes} (the tensor's declared ranges) a unit is
     * equal when they do not touch it, and is not read; one {@code fresh} does not touch is copied if it must be, and
     * known.
     */
    private static void compare(
            SnapshotTensor t,
            long offset,
            long from,
            long to,
            MemorySegment dst,
            long unit,
            long[] changes,
            long[] fresh,
            Runs runs,
            TensorHashes hashes,
            BlockIds blocks) {
        MemorySegment src = t.segment() != null ? t.segment() : MemorySegment.ofArray(t.floats());
        long runStart = from;
        int runKind = Runs.ARRIVED;
        for (long pos = from; pos < to; pos += unit) {
            long n = Math.min(unit, to - pos);
            int kind;
            if (changes != null) {
                kind = !DeclaredChanges.touches(changes, pos, pos + n)
                        ? Runs.IN_PLACE
                        : DeclaredChanges.touches(fresh, pos, pos + n) ? Runs.ARRIVED : Runs.COPIED_KNOWN;
            } else {
                kind = RangeCompare.equal(src, pos, dst, offset + pos, n) ? Runs.IN_PLACE : Runs.ARRIVED;
            }
            if (pos > runStart && (kind != runKind || pos - runStart >= CHUNK)) {
                runs.add(runKind, t, dst, offset, runStart, pos - runStart);
                if (hashes != null && runs.shared) {
                    runs.report(hashes, blocks);
                }
                runStart = pos;
            }
            runKind = kind;
        }
        if (to > runStart) {
            runs.add(runKind, t, dst, offset, runStart, to - runStart);
        }
    }

    /**
     * A snapshot cut into pieces of at most {@code chunk} bytes, each inside one tensor and starting at a multiple of
     * {@code chunk} in it.
     */
    private record Pieces(int[] tensor, long[] from, long[] length) {
        static Pieces of(List<TensorInfo> infos, long chunk) {
            int count = 0;
            for (TensorInfo info : infos) {
                count = Math.addExact(count, Math.toIntExact(Math.ceilDiv(info.length(), chunk)));
            }
            int[] tensor = new int[count];
            long[] from = new long[count];
            long[] length = new long[count];
            int c = 0;
            for (int i = 0; i < infos.size(); i++) {
                long len = infos.get(i).length();
                for (long done = 0; done < len; done += chunk) {
                    tensor[c] = i;
                    from[c] = done;
                    length[c] = Math.min(chunk, len - done);
                    c++;
                }
            }
            return new Pieces(tensor, from, length);
        }

        int count() {
            return tensor.length;
        }
    }

    /** The runs of one {@link #changed} copy: those to copy copied at once, reported when {@link #report} is called. */
    private static final class Runs {
        /** A run that differs from the earlier hashes' version: copied, and hashed. */
        static final int ARRIVED = 0;
        /** A run equal to the buffer's bytes: neither copied nor hashed (known). */
        static final int IN_PLACE = 1;
        /** A run that differs from the buffer's bytes but not from the earlier hashes' version: copied, and known. */
        static final int COPIED_KNOWN = 2;
        /** Per run not reported yet: offset in the data, length, its kind; three longs each. */
        private long[] runs = new long[48];

        private int count;
        long copied;
        long unchanged;
        /** Whether a run was known: the version shares units with the earlier one. */
        boolean shared;

        void add(int kind, SnapshotTensor t, MemorySegment dst, long offset, long from, long n) {
            if (kind == IN_PLACE) {
                unchanged += n;
            } else {
                t.copyTo(dst, offset, from, n);
                copied += n;
            }
            if (kind != ARRIVED) {
                shared = true;
            }
            if (3 * count + 3 > runs.length) {
                runs = Arrays.copyOf(runs, 2 * runs.length);
            }
            runs[3 * count] = offset + from;
            runs[3 * count + 1] = n;
            runs[3 * count + 2] = kind;
            count++;
        }

        /** Reports the runs not reported yet, in data order. */
        void report(TensorHashes hashes, BlockIds blocks) {
            for (int r = 0; r < count; r++) {
                long from = runs[3 * r];
                long n = runs[3 * r + 1];
                if (runs[3 * r + 2] != ARRIVED) {
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
