package io.viper.internal.producer;

import io.viper.Snapshot;
import io.viper.errors.ViperConfigException;
import io.viper.hash.HashAlgorithm;
import io.viper.internal.CopyHelpers;
import io.viper.internal.TensorHashes;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.PendingStore;
import io.viper.tensor.TensorInfo;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.Set;
import java.util.concurrent.ExecutorService;

/**
 * The training thread's part of publishing, all of which is the training stall: asks the snapshot to describe its
 * tensors (refusing bad ones), lays them out back to back, takes a buffer from the {@link StagingCache} and copies
 * every tensor into it ({@link StagingCopy}). What it copied is reported to the version's {@link TensorHashes} (and its
 * {@link BlockIds}) once the copy ended, which hash it on the pool, so the stall stays a plain copy that has the memory
 * to itself. When the buffer still holds an earlier version of the same layout, only what differs from it is copied and
 * hashed ({@code viper.producer.staging.compare}), found by comparing, or without reading the rest where the training
 * code said what changed ({@link Snapshot.Changes}, {@link DeclaredChanges}). A snapshot with GPU tensors is staged by
 * {@link GpuStaging}. The result goes to the {@link PublishPipeline}.
 *
 * <p>Training thread only (the producer's publish is synchronized); the snapshot's memory is read only during
 * {@link #stage}.
 */
final class Stager {
    private static final System.Logger LOG = System.getLogger(Stager.class.getName());

    private final StagingCache cache;
    private final ExecutorService hashPool;
    private final int hashWorkers;
    private final HashAlgorithm algorithm;
    private final long blockBytes;
    /** {@link StagingCopy#compareUnit}, 0 when staging copies everything. */
    private final long compareUnit;
    /** {@code viper.producer.block.skip.unshared}: see {@link BlockIds}. */
    private final boolean skipUnshared;

    private final GpuStaging gpu;
    private final CopyHelpers copyHelpers;
    /** Where versions are flushed: told each block's id as it is known, to write it early. */
    private final Optional<CheckpointRepository> repository;

    private final DeclaredChanges declaredChanges = new DeclaredChanges();

    /**
     * @param hashWorkers pool threads that hash one version during its copy
     * @param algorithm the hash the manifests carry ({@code viper.hash.algorithm})
     * @param blockBytes the size of the blocks whose ids the manifests carry ({@code viper.block.bytes}; 0: none)
     * @param compare whether a snapshot is compared with what a recycled buffer holds
     *     ({@code viper.producer.staging.compare})
     * @param skipUnshared whether a compared version that shares nothing with the buffer's goes without block ids
     *     ({@code viper.producer.block.skip.unshared})
     * @param copyHelpers the pool threads that help copy large snapshots ({@code viper.producer.copy.threads})
     * @param repository the PFS the versions are flushed to, if any
     */
    Stager(
            StagingCache cache,
            ExecutorService hashPool,
            int hashWorkers,
            HashAlgorithm algorithm,
            long blockBytes,
            boolean compare,
            boolean skipUnshared,
            GpuStaging gpu,
            CopyHelpers copyHelpers,
            Optional<CheckpointRepository> repository) {
        this.cache = cache;
        this.hashPool = hashPool;
        this.hashWorkers = hashWorkers;
        this.algorithm = algorithm;
        this.blockBytes = blockBytes;
        this.compareUnit = compare ? StagingCopy.compareUnit(blockBytes) : 0;
        this.skipUnshared = skipUnshared;
        this.gpu = gpu;
        this.copyHelpers = copyHelpers;
        this.repository = repository;
    }

    /**
     * A version in staging, handed from the training thread to the background thread.
     *
     * @param buffer the staging buffer, FILLING until the pipeline activates it
     * @param infos the tensors' layout in the buffer
     * @param hashes the tensors' hashes, started as the copy ended (the pipeline awaits and closes them)
     * @param blocks the tensors' block ids, likewise
     * @param hostCopy what the background thread must do first so the host staging holds every tensor (a GPU-staged
     *     version); its bytes are hashed after it
     * @param copied the bytes the copy wrote and those it found unchanged in the buffer
     * @param aliases second names of stored tensors (alias to tensor), for the version's metadata
     * @param pfs the version's store into the PFS, begun as its blocks are hashed (the pipeline stores or closes it);
     *     null without a PFS
     */
    record Staged(
            StagingBuffer buffer,
            long version,
            List<TensorInfo> infos,
            TensorHashes hashes,
            BlockIds blocks,
            Runnable hostCopy,
            StagingCopy.Copied copied,
            SequencedMap<String, String> aliases,
            PendingStore pfs) {
        /**
         * Once {@code hashes} and {@code blocks} were awaited: what the buffer holds, for a later version to compare
         * with.
         */
        StagedContent content() {
            return new StagedContent(version, infos, hashes.pieces(), blocks.ids());
        }
    }

    /** As {@link #stage(Snapshot, long, Set)} for a version without metadata. */
    Staged stage(Snapshot snapshot, long version) {
        return stage(snapshot, version, Set.of());
    }

    /**
     * Copies {@code snapshot} into staging as {@code version}; {@code metadataKeys} are the version's metadata keys,
     * which no alias may shadow.
     *
     * @throws ViperConfigException for a bad snapshot (nothing is staged)
     */
    Staged stage(Snapshot snapshot, long version, Set<String> metadataKeys) {
        try {
            return stageDescribed(snapshot, version, metadataKeys);
        } catch (RuntimeException e) {
            // Described, or half described, and not staged: what it declared cannot be built on.
            declaredChanges.lost();
            throw e;
        }
    }

    private Staged stageDescribed(Snapshot snapshot, long version, Set<String> metadataKeys) {
        DescribedSnapshot described = new DescribedSnapshot(gpu, metadataKeys);
        snapshot.describe(described);
        List<long[]> declared = described.declared();
        List<SnapshotTensor> tensors = described.tensors();
        long total = 0;
        List<TensorInfo> infos = new ArrayList<>(tensors.size());
        for (SnapshotTensor s : tensors) {
            TensorInfo info = new TensorInfo(s.name(), s.dtype(), s.shape(), total, s.byteSize());
            infos.add(info);
            total = Math.addExact(total, info.length());
        }
        boolean comparable = compareUnit > 0 && tensors.stream().allMatch(StagingCopy::comparable);
        StagingCache.Acquired taken = cache.acquire(version, total, held -> comparable && held.sameLayout(infos));
        StagingBuffer buffer = taken.buffer();
        StagedContent held = taken.held();
        // Where the training code said what changed since the buffer's version, those ranges are all that is read.
        List<long[]> changes = held == null ? null : declaredChanges.since(held.version(), infos, declared);
        // And where it said what changed since a newer version, the units it did not touch take that version's hashes.
        StagedContent before = held;
        List<long[]> fresh = changes;
        StagedContent newest = changes == null ? null : cache.newest();
        if (newest != null && newest.version() > held.version() && newest.sameLayout(infos)) {
            List<long[]> sinceNewest = declaredChanges.since(newest.version(), infos, declared);
            if (sinceNewest != null) {
                before = newest;
                fresh = sinceNewest;
            }
        }
        TensorHashes hashes = new TensorHashes(
                infos,
                Collections.nCopies(infos.size(), algorithm),
                buffer.data(),
                hashPool,
                hashWorkers,
                before == null ? null : before.pieces());
        // The PFS writes each block as soon as its id is known: the flush overlaps the hashing.
        PendingStore pfs = repository
                .map(r -> r.begin(cache.model(), version, buffer.data()))
                .orElse(null);
        BlockIds blocks = new BlockIds(
                infos,
                blockBytes,
                buffer.data(),
                hashPool,
                hashWorkers,
                before == null ? null : before.blocks(),
                before != null && skipUnshared,
                pfs == null ? TensorHashes.PieceListener.NONE : pfs::blockHashed);
        // Every range that lands in the host staging is hashed twice: tensor and block hashes.
        GpuStaging.Arrivals arrivals = (from, length) -> {
            hashes.arrived(from, length);
            blocks.arrived(from, length);
        };
        try {
            Runnable hostCopy = GpuStaging.NOTHING_LEFT;
            StagingCopy.Copied copied;
            if (tensors.stream().anyMatch(SnapshotTensor::onDevice)) {
                hostCopy = gpu.stage(tensors, infos, buffer, total, version, arrivals);
                copied = new StagingCopy.Copied(total, 0);
            } else if (held != null) {
                copied = StagingCopy.changed(
                        tensors,
                        infos,
                        total,
                        buffer.writable(),
                        compareUnit,
                        changes,
                        fresh,
                        hashes,
                        blocks,
                        copyHelpers);
            } else {
                copied = StagingCopy.all(tensors, infos, total, buffer.writable(), arrivals, copyHelpers);
            }
            boolean noIds = blocks.copyEnded();
            declaredChanges.staged(version, infos, declared);
            LOG.log(
                    System.Logger.Level.DEBUG,
                    "{0} v{1}: copied and hashed {2} bytes, {3} bytes unchanged {4}{5}",
                    cache.model(),
                    Long.toString(version),
                    Long.toString(copied.copiedBytes()),
                    Long.toString(copied.unchangedBytes()),
                    held == null
                            ? "(nothing to compare with)"
                            : "since v" + held.version()
                                    + (before != held ? ", hashes known since v" + before.version() : ""),
                    noIds ? "; nothing shared: no block ids" : "");
            return new Staged(buffer, version, infos, hashes, blocks, hostCopy, copied, described.aliases(), pfs);
        } catch (RuntimeException e) {
            hashes.close();
            blocks.close();
            if (pfs != null) {
                pfs.close();
            }
            cache.abandon(buffer);
            throw e;
        }
    }
}
