package io.viper.transfer.pfs.internal;

import io.viper.errors.IoProblems;
import io.viper.hash.ContentHash;
import io.viper.manifest.BlockList;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * The PFS repository's shared, content-addressed block store: {@code <root>/.blocks/<ab>/<id>}, one file per distinct
 * block ({@link BlockList}) of every version of every model, named by the block's id ({@code ab} its first two hex
 * digits), holding exactly the block's bytes. A block is written once and shared by every version that has it; its
 * references are the manifests of the versions (complete or being written) that list it, so the count needs no file of
 * its own that a crash could leave wrong.
 *
 * <p>Writing ({@link #put}, through a {@link BlockBatch}): a missing block goes to {@code .tmp-*} beside its final
 * name; once every new block of the version is written they are made durable together (one {@code syncfs}, or an fsync
 * per file), then renamed into place (atomic), and their directories fsynced, all before the version that refers to
 * them is committed, so a visible version never names a block that is not durable. A block already there of the right
 * size is reused and its modification time set to now.
 *
 * <p>Deleting ({@link #sweep}): after retention removed versions, the blocks that no manifest of a version directory or
 * of a store in progress ({@code .tmp-*}) lists, and that nobody touched since {@code grace} before the sweep began,
 * are deleted at once, so that the store holds about retention + 1 versions. Stores in this process hold
 * {@link #writing()} from before their manifest is on disk to their commit, which a sweep excludes. A store in another
 * process writes its manifest before it reuses (touches) or writes a block: one the sweep's list of references missed
 * touches its blocks after the sweep began, so the short grace only has to cover the clocks of the hosts sharing the
 * repository. A block is renamed to a {@code .tmp-*} grave before it is deleted and its time read again there: one
 * touched meanwhile is moved back. A crash mid-delete leaves only unreferenced blocks and graves, which later sweeps
 * delete; leftovers of interrupted block writes go once untouched for {@link PfsRepository#STALE_AFTER}.
 *
 * <p>Thread-safe.
 */
final class BlockStore {
    /** The store's directory under the repository root (model names never start with '.'). */
    static final String DIR = ".blocks";

    private static final String TMP_PREFIX = ".tmp-";

    private static final System.Logger LOG = System.getLogger(BlockStore.class.getName());

    private final Path dir;
    private final Duration grace;
    private final WriteHooks hooks;
    private final ReadWriteLock lock = new ReentrantReadWriteLock();

    /**
     * @param root the repository root
     * @param grace how long before a sweep began an unreferenced block must have been touched last for the sweep to
     *     delete it
     */
    BlockStore(Path root, Duration grace, WriteHooks hooks) {
        this.dir = root.resolve(DIR);
        this.grace = grace;
        this.hooks = hooks;
    }

    /** The file of block {@code id} under the repository rooted at {@code root}. */
    static Path pathOf(Path root, ContentHash id) {
        String hex = id.toHex();
        return root.resolve(DIR).resolve(hex.substring(0, 2)).resolve(hex);
    }

    /** The store's directory. */
    Path dir() {
        return dir;
    }

    /** The file of block {@code id} in this store. */
    Path pathOf(ContentHash id) {
        String hex = id.toHex();
        return dir.resolve(hex.substring(0, 2)).resolve(hex);
    }

    /** Held by a store from before its manifest is written until it is committed: no sweep runs meanwhile. */
    ReadWriteLock writing() {
        return lock;
    }

    /**
     * Makes every block of {@code manifest} durable in the store: writes those missing from {@code data} (its data
     * section), reuses the others. Call holding {@code writing().readLock()}.
     *
     * @param fresh receives each block this call wrote, with its modification time once written
     * @param early the blocks written while the version was hashed, made durable and renamed with the rest (it keeps
     *     and closes their batch); null: none
     * @return the bytes written (the rest was reused)
     */
    long put(Manifest manifest, MemorySegment data, Map<ContentHash, FileTime> fresh, EarlyBlocks early)
            throws IOException {
        Set<ContentHash> done = new HashSet<>();
        long written = early == null ? 0 : early.writtenBytes();
        BlockBatch batch = early == null ? new BlockBatch(dir, InFlight.parallelFor(data)) : early.batch();
        try {
            for (TensorEntry e : manifest.tensors()) {
                BlockList b = e.blocks();
                for (int j = 0; j < b.ids().size(); j++) {
                    ContentHash id = b.ids().get(j);
                    if (!done.add(id) || (early != null && early.wrote(id))) {
                        continue;
                    }
                    long len = b.length(j, e.info().length());
                    Path file = pathOf(id);
                    if (reuse(file, len)) {
                        continue;
                    }
                    long at = e.info().offset() + b.start(j);
                    hooks.beforeChunk(file, at);
                    batch.add(id, file, data.asSlice(at, len));
                    written += len;
                }
            }
            batch.commit(fresh);
        } finally {
            if (early == null) {
                batch.close();
            }
        }
        return written;
    }

    /**
     * Whether {@code file} holds a block of {@code length} bytes already; if so it is touched, so that no sweep takes
     * it now.
     */
    private static boolean reuse(Path file, long length) throws IOException {
        if (!holds(file, length)) {
            return false;
        }
        try {
            Files.setLastModifiedTime(file, FileTime.from(Instant.now()));
            return true;
        } catch (NoSuchFileException e) {
            return false;
        }
    }

    /**
     * Whether {@code file} is a block of {@code length} bytes, not a planted link (which a write renames the block
     * over, not following it); one of another size is logged and written again.
     */
    static boolean holds(Path file, long length) throws IOException {
        try {
            if (Files.isSymbolicLink(file)) {
                return false;
            }
            long size = Files.size(file);
            if (size != length) {
                LOG.log(
                        Level.WARNING,
                        "block {0} holds {1} bytes, not {2}: written again",
                        file,
                        Long.toString(size),
                        Long.toString(length));
                return false;
            }
            return true;
        } catch (NoSuchFileException e) {
            return false;
        }
    }

    /**
     * After a store that failed before its commit: deletes the blocks it wrote ({@code fresh}) that no manifest
     * {@code referenced} supplies lists and that no store touched since (a reuse sets the time), so that a full disk is
     * not kept full by the blocks of a version that never became visible. Takes the write lock, like a sweep; nothing
     * is deleted when a manifest is unreadable.
     *
     * @return the blocks deleted
     */
    int discard(Map<ContentHash, FileTime> fresh, Supplier<Set<ContentHash>> referenced) {
        lock.writeLock().lock();
        try {
            Set<ContentHash> live = referenced.get();
            if (live == null) {
                return 0;
            }
            int deleted = 0;
            for (Map.Entry<ContentHash, FileTime> e : fresh.entrySet()) {
                Path file = pathOf(e.getKey());
                try {
                    if (!live.contains(e.getKey())
                            && Files.getLastModifiedTime(file).equals(e.getValue())) {
                        hooks.beforeBlockDelete(file);
                        Files.deleteIfExists(file);
                        deleted++;
                    }
                } catch (NoSuchFileException gone) {
                    // a sweep took it already
                } catch (IOException ex) {
                    LOG.log(
                            Level.WARNING,
                            "block store {0}: could not remove block {1} of a failed store: {2}",
                            dir,
                            file,
                            IoProblems.describe(ex));
                }
            }
            return deleted;
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Deletes the blocks that no manifest {@code referenced} supplies lists and nobody touched for the grace period,
     * and leftovers of interrupted block writes. {@code referenced} is read after the candidates were listed, under the
     * write lock; it returns null when some manifest could not be read, and then nothing is deleted.
     *
     * @return the blocks deleted
     */
    int sweep(Supplier<Set<ContentHash>> referenced) {
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
            return 0;
        }
        lock.writeLock().lock();
        try {
            // before the references are read: a store they miss touches its blocks after this
            Instant began = Instant.now();
            Set<ContentHash> live = referenced.get();
            if (live == null) {
                return 0;
            }
            Instant untouchedSince = began.minus(grace);
            Instant staleSince = began.minus(PfsRepository.STALE_AFTER);
            int deleted = 0;
            try (DirectoryStream<Path> prefixes = Files.newDirectoryStream(dir)) {
                for (Path prefix : prefixes) {
                    deleted += sweep(prefix, live, untouchedSince, staleSince);
                }
            }
            if (deleted > 0) {
                LOG.log(
                        Level.INFO,
                        "block store {0}: deleted {1} blocks no retained version refers to",
                        dir,
                        Long.toString(deleted));
            }
            return deleted;
        } catch (IOException e) {
            LOG.log(Level.WARNING, "block store {0}: sweep stopped: {1}", dir, IoProblems.describe(e));
            return 0;
        } finally {
            lock.writeLock().unlock();
        }
    }

    private int sweep(Path prefix, Set<ContentHash> live, Instant untouchedSince, Instant staleSince)
            throws IOException {
        if (!Files.isDirectory(prefix, LinkOption.NOFOLLOW_LINKS)) {
            return 0;
        }
        int deleted = 0;
        try (DirectoryStream<Path> blocks = Files.newDirectoryStream(prefix)) {
            for (Path block : blocks) {
                String name = block.getFileName().toString();
                boolean leftover = name.startsWith(TMP_PREFIX);
                ContentHash id = leftover ? null : idOf(name);
                if (!leftover && (id == null || live.contains(id))) {
                    continue;
                }
                // a block write in progress elsewhere may pause longer than the grace (an fsync): leftovers wait
                if (touchedSince(block, leftover ? staleSince : untouchedSince)) {
                    continue;
                }
                hooks.beforeBlockDelete(block);
                if (leftover) {
                    Files.deleteIfExists(block);
                } else if (bury(block, untouchedSince)) {
                    deleted++;
                }
            }
        }
        return deleted;
    }

    private static boolean touchedSince(Path file, Instant since) throws IOException {
        return Files.getLastModifiedTime(file, LinkOption.NOFOLLOW_LINKS)
                .toInstant()
                .isAfter(since);
    }

    /**
     * Deletes {@code block} unless a store claims it meanwhile: renamed to a grave first, so that a store's reuse from
     * now on finds it missing and writes it again, then its time read there; one touched since {@code untouchedSince}
     * (a store reused it just before the rename) is moved back. Returns whether it was deleted.
     */
    private static boolean bury(Path block, Instant untouchedSince) throws IOException {
        Path grave = block.resolveSibling(TMP_PREFIX + block.getFileName() + "-del-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE));
        try {
            Files.move(block, grave, StandardCopyOption.ATOMIC_MOVE);
        } catch (NoSuchFileException gone) {
            return false;
        }
        if (touchedSince(grave, untouchedSince)) {
            // identical bytes to any copy the store wrote meanwhile, which this replaces
            Files.move(grave, block, StandardCopyOption.ATOMIC_MOVE);
            LOG.log(Level.DEBUG, "block {0} was claimed by a store while a sweep deleted it: kept", block);
            return false;
        }
        Files.delete(grave);
        return true;
    }

    /** The id a block file's name spells, or null when it spells none (such files are left alone). */
    private static ContentHash idOf(String name) {
        try {
            return ContentHash.parseHex(BlockList.ID_ALGORITHM, name);
        } catch (RuntimeException e) {
            return null;
        }
    }
}
