package io.viper.transfer.pfs.internal;

import static io.viper.transfer.pfs.internal.DurableFiles.deleteTreeQuietly;
import static io.viper.transfer.pfs.internal.DurableFiles.newestModification;
import static io.viper.transfer.pfs.internal.DurableFiles.randomSuffix;
import static io.viper.transfer.pfs.internal.PfsRepository.DEL_PREFIX;
import static io.viper.transfer.pfs.internal.PfsRepository.LATEST_TMP_PREFIX;
import static io.viper.transfer.pfs.internal.PfsRepository.MANIFEST_FILE;
import static io.viper.transfer.pfs.internal.PfsRepository.TMP_PREFIX;
import static io.viper.transfer.pfs.internal.VersionReader.VERSION_NAME;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperFormatException;
import io.viper.hash.ContentHash;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;

/**
 * What a PFS repository removes: versions past retention (renamed to {@code .del-*} first, so that they vanish
 * atomically, then deleted), the leftovers of interrupted writes and deletions, and the set of blocks versions still
 * refer to, from which the {@link BlockStore} learns what it may delete. Thread-safe where noted;
 * {@link #applyRetention} runs under the model's lock.
 */
final class Housekeeping {
    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());

    private final Path root;
    private final int retention;
    private final VersionReader reader;

    /** Housekeeping of the repository at {@code root}, keeping the newest {@code retention} versions of each model. */
    Housekeeping(Path root, int retention, VersionReader reader) {
        this.root = root;
        this.retention = retention;
        this.reader = reader;
    }

    /**
     * Keeps the newest {@code retention} versions and the one LATEST names. Call under the model lock, after LATEST
     * moved. Returns whether it deleted a version (whose blocks the caller then sweeps, outside the lock).
     */
    boolean applyRetention(String model, Path modelDir) {
        List<Long> versions = reader.versions(model);
        if (versions.size() <= retention) {
            return false;
        }
        boolean deleted = false;
        OptionalLong latest = reader.readLatest(modelDir);
        for (long v : versions.subList(0, versions.size() - retention)) {
            if (latest.isPresent() && latest.getAsLong() == v) {
                continue;
            }
            Path dir = modelDir.resolve(Long.toString(v));
            Path grave = modelDir.resolve(DEL_PREFIX + v + "-" + randomSuffix());
            try {
                Files.move(dir, grave, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                LOG.log(Level.WARNING, "retention: cannot remove {0}: {1}", dir, IoProblems.describe(e));
                continue;
            }
            deleteTreeQuietly(grave);
            deleted = true;
            LOG.log(
                    Level.INFO,
                    "retention: deleted {0} v{1} (keeping the newest {2})",
                    model,
                    Long.toString(v),
                    Long.toString(retention));
        }
        return deleted;
    }

    /**
     * The ids of every block a version of any model refers to, complete or being stored ({@code .tmp-*}); null when a
     * manifest could not be read, so that nothing is deleted on a guess.
     */
    Set<ContentHash> referencedBlocks() {
        Set<ContentHash> ids = new HashSet<>();
        try (DirectoryStream<Path> models =
                Files.newDirectoryStream(root, p -> !p.getFileName().toString().startsWith("."))) {
            for (Path modelDir : models) {
                if (!Files.isDirectory(modelDir, LinkOption.NOFOLLOW_LINKS)) {
                    continue;
                }
                try (DirectoryStream<Path> entries = Files.newDirectoryStream(modelDir, p -> {
                    String n = p.getFileName().toString();
                    return VERSION_NAME.matcher(n).matches() || n.startsWith(TMP_PREFIX);
                })) {
                    for (Path entry : entries) {
                        Path file = entry.resolve(MANIFEST_FILE);
                        if (!Files.isRegularFile(file)) {
                            continue; // a store before its manifest was written refers to nothing yet
                        }
                        Manifest m = ManifestCodec.decode(Files.readAllBytes(file), file.toString());
                        m.tensors().forEach(t -> ids.addAll(t.blocks().ids()));
                    }
                }
            }
        } catch (IOException | ViperFormatException e) {
            LOG.log(
                    Level.WARNING,
                    "block store of {0}: no block deleted, since a manifest could not be read: {1}",
                    root,
                    e instanceof IOException io ? IoProblems.describe(io) : e.getMessage());
            return null;
        }
        return ids;
    }

    /** Removes {@code .del-*} leftovers and temporary entries untouched since {@code staleBefore}. */
    void cleanStale(Path modelDir, Instant staleBefore) {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(modelDir, e -> {
            String n = e.getFileName().toString();
            return n.startsWith(TMP_PREFIX) || n.startsWith(DEL_PREFIX) || n.startsWith(LATEST_TMP_PREFIX);
        })) {
            for (Path p : entries) {
                boolean doomed = p.getFileName().toString().startsWith(DEL_PREFIX)
                        || newestModification(p).isBefore(staleBefore);
                if (doomed) {
                    deleteTreeQuietly(p);
                    LOG.log(Level.INFO, "removed {0}, left by an interrupted write or deletion", p);
                }
            }
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot clean temporary entries of {0}: {1}", modelDir, IoProblems.describe(e));
        }
    }
}
