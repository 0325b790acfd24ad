package io.viper.transfer.pfs.internal;

import static io.viper.transfer.pfs.internal.DurableFiles.deleteTreeQuietly;
import static io.viper.transfer.pfs.internal.DurableFiles.fsyncDirectory;
import static io.viper.transfer.pfs.internal.DurableFiles.randomSuffix;
import static io.viper.transfer.pfs.internal.DurableFiles.writeSmallFile;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.PendingStore;
import io.viper.spi.StagedCheckpoint;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.Lock;

/**
 * The PFS checkpoint repository (docs/architecture.md#pfs-repository):
 * {@code <root>/<model>/<version>/model.safetensors} (a standard safetensors file) and {@code manifest.json} (the
 * {@link ManifestCodec} encoding, its location the file), with {@code <root>/<model>/LATEST} naming the newest complete
 * version.
 *
 * <p>Writing a version: both files are written into {@code <root>/<model>/.tmp-<version>-<random>}, each fsynced, the
 * directory fsynced, then renamed to {@code <version>} (atomic) and the model directory fsynced; only then is
 * {@code LATEST} replaced (temporary file, fsync, atomic rename), and only forward. Retention then keeps the newest
 * {@code retention} versions, never the one {@code LATEST} names; a doomed version is first renamed to {@code .del-*}
 * (atomically invisible), then deleted. A reader reads {@code LATEST}, then the complete directory it names, so it
 * never sees a partial version. A failed store deletes its temporary directory and leaves every earlier version and
 * {@code LATEST} as they were. Entries that are not decimal version directories are ignored. When a producer starts,
 * {@link #recover} removes what a crashed writer left ({@code .tmp-*}) and moves {@code LATEST} to a complete version
 * it does not name yet; between starts, {@code .tmp-*} directories older than an hour are removed by the next store of
 * that model.
 *
 * <p>A version whose manifest has blocks is kept as blocks instead of a safetensors file: its directory holds the
 * manifest only, and its bytes are in the shared {@link BlockStore} under {@code <root>/.blocks}, each distinct block
 * once; the manifest is written first, the blocks it lacks next, all durable before the rename commits the version.
 * When retention deleted a version, the store deletes the blocks no remaining version refers to, after a short grace
 * ({@link #BLOCK_GRACE}), so that the repository holds about retention + 1 versions.
 *
 * <p>Thread-safe. Within one process, stores of one model are serialised where they move {@code LATEST}; the repository
 * assumes one producer process per model per root (no file locks, which many parallel file systems do not offer).
 *
 * <p>Parts: {@link VersionReader} reads versions and {@code LATEST}, {@link VersionWriter} writes the safetensors file
 * and moves {@code LATEST}, {@link Housekeeping} applies retention and removes what interrupted writes left,
 * {@link DurableFiles} holds the fsynced writes they share.
 */
public final class PfsRepository implements CheckpointRepository {
    /** Name of the safetensors file in a version directory. */
    public static final String DATA_FILE = "model.safetensors";
    /** Name of the manifest file in a version directory. */
    public static final String MANIFEST_FILE = "manifest.json";
    /** Name of the file that holds the newest complete version of a model. */
    public static final String LATEST_FILE = "LATEST";
    /** Prefix of temporary version directories. */
    static final String TMP_PREFIX = ".tmp-";
    /** Prefix of version directories being deleted by retention. */
    static final String DEL_PREFIX = ".del-";
    /** Prefix of temporary LATEST files. */
    static final String LATEST_TMP_PREFIX = ".LATEST.tmp-";
    /** Temporary entries older than this are considered left by a crashed writer. */
    static final Duration STALE_AFTER = Duration.ofHours(1);
    /**
     * How long before a sweep an unreferenced block must have been touched last to be deleted: short, since a store in
     * another process touches the blocks it claims after the sweep began; it covers the clocks of hosts sharing the
     * repository (docs/architecture.md#pfs-repository).
     */
    static final Duration BLOCK_GRACE = Duration.ofSeconds(2);
    /** Default chunk of the data section written per call. */
    static final int DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024;

    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());

    private final Path root;
    private final int retention;
    private final WriteHooks hooks;
    private final BlockStore blocks;
    private final ConcurrentHashMap<String, Object> modelLocks = new ConcurrentHashMap<>();
    private final VersionReader reader;
    private final Housekeeping housekeeping;
    private final VersionWriter writer;
    private volatile boolean closed;

    /**
     * A repository rooted at the existing directory {@code root}, keeping the newest {@code retention} versions of each
     * model.
     */
    public PfsRepository(Path root, int retention) {
        this(root, retention, DEFAULT_CHUNK_BYTES, WriteHooks.NONE);
    }

    PfsRepository(Path root, int retention, int chunkBytes, WriteHooks hooks) {
        this(root, retention, chunkBytes, hooks, BLOCK_GRACE);
    }

    /** As above; an unreferenced block is deleted once untouched for {@code blockGrace} (see {@link BlockStore}). */
    PfsRepository(Path root, int retention, int chunkBytes, WriteHooks hooks, Duration blockGrace) {
        this.root = root.toAbsolutePath().normalize();
        if (retention < 1) {
            throw new ViperConfigException(
                    "PFS repository " + this.root + ": retention must be at least 1, got " + retention);
        }
        if (chunkBytes < 1) {
            throw new IllegalArgumentException("chunkBytes " + chunkBytes);
        }
        this.retention = retention;
        this.hooks = Objects.requireNonNull(hooks, "hooks");
        this.blocks = new BlockStore(this.root, blockGrace, hooks);
        this.reader = new VersionReader(this.root);
        this.housekeeping = new Housekeeping(this.root, retention, reader);
        this.writer = new VersionWriter(chunkBytes, this.hooks, reader);
    }

    /** The absolute root directory. */
    public Path root() {
        return root;
    }

    /** How many versions of each model are kept. */
    public int retention() {
        return retention;
    }

    /** The location of {@code model} v{@code version} in this repository (whether stored or not). */
    public Location locationOf(String model, long version) {
        return VersionReader.locationOf(reader.versionDir(model, version));
    }

    @Override
    public Optional<Location> locate(String model, long version) {
        return Optional.of(locationOf(model, version));
    }

    @Override
    public Location store(Manifest manifest, StagedCheckpoint staged) {
        return store(manifest, staged, null, true);
    }

    /**
     * Writes each block of a version with blocks as soon as the producer hashed it ({@link EarlyBlocks}; a version
     * whose data this process cannot hand to the I/O threads writes nothing early), and deletes what the retention
     * drops only once the version was announced ({@link PendingStore#close}).
     */
    @Override
    public PendingStore begin(String model, long version, MemorySegment data) {
        ensureOpen();
        return new EarlyBlocks(this, blocks, hooks, model, version, data, InFlight.parallelFor(data));
    }

    /**
     * As {@link #store(Manifest, StagedCheckpoint)}, with the blocks {@code early} wrote (null: none); the retention of
     * older versions (and the sweep of their blocks) only with {@code retainNow}, else the caller runs {@link #retain}
     * after it announced the version, which then does not wait for the deletes.
     */
    Location store(Manifest manifest, StagedCheckpoint staged, EarlyBlocks early, boolean retainNow) {
        Objects.requireNonNull(manifest, "manifest");
        Objects.requireNonNull(staged, "staged");
        ensureOpen();
        String model = manifest.model();
        long version = manifest.version();
        if (!model.equals(staged.model()) || version != staged.version()) {
            throw new ViperConfigException("store: the manifest is " + model + " v" + version
                    + " but the staged checkpoint is " + staged.model() + " v" + staged.version());
        }
        MemorySegment data = staged.data();
        if (data.byteSize() != manifest.totalBytes()) {
            throw new ViperConfigException("store: the staged data of " + model + " v" + version + " holds "
                    + data.byteSize() + " bytes but the manifest's tensors need " + manifest.totalBytes());
        }
        Path modelDir = root.resolve(model);
        Path versionDir = modelDir.resolve(Long.toString(version));
        Location location = VersionReader.locationOf(versionDir);
        byte[] head = VersionWriter.safetensorsHead(manifest);
        byte[] manifestBytes = ManifestCodec.encode(manifest.replaceLocations(List.of(location)));
        Path tmp = null;
        long began = System.nanoTime();
        // A version with blocks keeps its bytes in the block store: no sweep may run from before its
        // manifest is written until it is committed.
        Lock writingBlocks = manifest.blockBytes() > 0 ? blocks.writing().readLock() : null;
        boolean locked = false;
        boolean retired = false;
        Map<ContentHash, FileTime> freshBlocks = new HashMap<>();
        try {
            if (!Files.isDirectory(root)) {
                Files.createDirectories(root);
            }
            if (DurableFiles.ensureDirectory(modelDir)) { // refuses a link planted as the model directory
                fsyncDirectory(root);
            }
            housekeeping.cleanStale(modelDir, Instant.now().minus(STALE_AFTER));
            synchronized (lockFor(model)) {
                if (alreadyStored(manifest, versionDir)) {
                    writer.publishLatest(modelDir, version);
                    return location;
                }
                checkRetentionWindow(model, version);
            }
            if (writingBlocks != null) {
                writingBlocks.lock();
                locked = true;
            }
            tmp = Files.createDirectory(modelDir.resolve(TMP_PREFIX + version + "-" + randomSuffix()));
            if (locked) {
                // first: a sweep counts its blocks as referenced from now on
                writeSmallFile(tmp.resolve(MANIFEST_FILE), manifestBytes);
                blocks.put(manifest, data, freshBlocks, early);
            } else {
                writer.writeDataFile(tmp.resolve(DATA_FILE), head, data);
                writeSmallFile(tmp.resolve(MANIFEST_FILE), manifestBytes);
            }
            fsyncDirectory(tmp);
            hooks.beforeCommit(tmp);
            synchronized (lockFor(model)) {
                if (!alreadyStored(manifest, versionDir)) {
                    Files.move(tmp, versionDir, StandardCopyOption.ATOMIC_MOVE);
                    tmp = null;
                    fsyncDirectory(modelDir);
                    LOG.log(
                            Level.INFO,
                            "stored {0} v{1} ({2} bytes) in {3} in {4} ms",
                            model,
                            Long.toString(version),
                            Long.toString(manifest.totalBytes()),
                            versionDir,
                            Long.toString((System.nanoTime() - began) / 1_000_000));
                }
                writer.publishLatest(modelDir, version);
                retired = retainNow && applyRetention(model, modelDir);
            }
            return location;
        } catch (IOException e) {
            throw new ViperException(
                    ViperException.Reason.IO,
                    "cannot store " + model + " v" + version + " in " + versionDir + ": " + IoProblems.describe(e),
                    e);
        } catch (IllegalStateException | IndexOutOfBoundsException e) {
            throw new ViperException(
                    ViperException.Reason.INTERNAL,
                    "cannot store " + model + " v" + version + " in " + versionDir
                            + ": the staged data became unreadable during the copy (" + e.getMessage() + ")",
                    e);
        } finally {
            boolean notCommitted = tmp != null;
            if (tmp != null) {
                deleteTreeQuietly(tmp);
            }
            if (locked) {
                writingBlocks.unlock();
            }
            if (notCommitted && !freshBlocks.isEmpty()) {
                // a full disk must not stay full of blocks nobody names
                blocks.discard(freshBlocks, housekeeping::referencedBlocks);
            }
            if (retired) {
                blocks.sweep(housekeeping::referencedBlocks);
            }
        }
    }

    /**
     * A producer of {@code model} starts: removes every temporary entry ({@code .tmp-*}, {@code .del-*},
     * {@code .LATEST.tmp-*}: with one producer per model per root, none is in use), then moves {@code LATEST} forward
     * to the newest complete version (one a crash or a full disk kept it from naming) and returns that version, 0 when
     * none.
     */
    @Override
    public long recover(String model) {
        ensureOpen();
        Path modelDir = modelDir(model);
        if (!Files.isDirectory(modelDir, LinkOption.NOFOLLOW_LINKS)) {
            return 0;
        }
        synchronized (lockFor(model)) {
            housekeeping.cleanStale(modelDir, Instant.MAX);
            List<Long> versions = versions(model);
            if (versions.isEmpty()) {
                return 0;
            }
            long newest = versions.getLast();
            OptionalLong named = reader.readLatest(modelDir);
            if (named.isEmpty() || named.getAsLong() < newest) {
                try {
                    writer.publishLatest(modelDir, newest);
                    LOG.log(
                            Level.INFO,
                            "{0}: named v{1}, the newest complete version, left unnamed by an interrupted store",
                            modelDir.resolve(LATEST_FILE),
                            Long.toString(newest));
                } catch (IOException e) {
                    LOG.log(
                            Level.WARNING,
                            "cannot move {0} to v{1}: {2}; readers keep the version it names",
                            modelDir.resolve(LATEST_FILE),
                            Long.toString(newest),
                            IoProblems.describe(e));
                }
            }
            return newest;
        }
    }

    @Override
    public Optional<Manifest> latest(String model) {
        ensureOpen();
        Path modelDir = modelDir(model);
        OptionalLong named = reader.readLatest(modelDir);
        for (int attempt = 0; named.isPresent() && attempt < 5; attempt++) {
            Optional<Manifest> m = reader.readVersion(model, named.getAsLong());
            if (m.isPresent()) {
                return m;
            }
            // Retention may have removed it after LATEST moved on: read LATEST again.
            OptionalLong again = reader.readLatest(modelDir);
            if (again.equals(named)) {
                reader.warnOnce(modelDir.resolve(LATEST_FILE) + ": names version " + named.getAsLong()
                        + ", which is missing or invalid; using the newest complete version instead");
                break;
            }
            named = again;
        }
        List<Long> versions = versions(model);
        for (int i = versions.size() - 1; i >= 0; i--) {
            Optional<Manifest> m = reader.readVersion(model, versions.get(i));
            if (m.isPresent()) {
                return m;
            }
        }
        return Optional.empty();
    }

    @Override
    public Optional<Manifest> find(String model, long version) {
        ensureOpen();
        modelDir(model);
        if (version <= 0) {
            throw new ViperConfigException("find " + model + ": version must be positive, got " + version);
        }
        return reader.readVersion(model, version);
    }

    @Override
    public List<Long> versions(String model) {
        ensureOpen();
        return reader.versions(model);
    }

    /** Marks the repository closed; later calls throw. Idempotent. Stores in progress finish. */
    @Override
    public void close() {
        closed = true;
    }

    @Override
    public String toString() {
        return "PfsRepository[" + root + ", retention " + retention + "]";
    }

    // ---------------------------------------------------------------- writing

    /**
     * Whether {@code versionDir} already holds this version with the same tensors and metadata (a repeated store:
     * nothing to write). Throws when it holds something else.
     */
    private boolean alreadyStored(Manifest manifest, Path versionDir) {
        if (!Files.exists(versionDir, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        Optional<Manifest> existing = reader.readVersion(manifest.model(), manifest.version());
        if (existing.isEmpty()) {
            throw new ViperException(
                    ViperException.Reason.IO,
                    "cannot store " + manifest.model() + " v" + manifest.version() + ": " + versionDir
                            + " exists but holds no valid version; remove it to store this version again");
        }
        if (!existing.get().sameContent(manifest)) {
            throw new ViperConfigException("cannot store " + manifest.model() + " v" + manifest.version() + ": "
                    + versionDir + " already holds this version with different tensors or metadata");
        }
        LOG.log(
                Level.DEBUG,
                "{0} v{1} is already stored in {2}",
                manifest.model(),
                Long.toString(manifest.version()),
                versionDir);
        return true;
    }

    /** Refuses a version that retention would delete at once (at least {@code retention} newer versions exist). */
    private void checkRetentionWindow(String model, long version) {
        List<Long> versions = versions(model);
        List<Long> newer = versions.stream().filter(v -> v > version).toList();
        if (newer.size() >= retention) {
            throw new ViperConfigException("cannot store " + model + " v" + version + ": " + newer.size()
                    + " newer versions are stored " + newer + " and retention keeps " + retention
                    + " (viper.pfs.retention), so it would be deleted at once");
        }
    }

    /**
     * Keeps the newest {@code retention} versions and the one LATEST names. Call under the model lock, after LATEST
     * moved; package-private for tests. Returns whether it deleted a version (whose blocks the caller then sweeps,
     * outside the lock).
     */
    boolean applyRetention(String model, Path modelDir) {
        return housekeeping.applyRetention(model, modelDir);
    }

    /** Deletes the versions of {@code model} beyond the retention, then the blocks only they referred to. */
    void retain(String model) {
        if (closed) {
            return; // the next store retains
        }
        boolean retired;
        synchronized (lockFor(model)) {
            retired = applyRetention(model, modelDir(model));
        }
        if (retired) {
            blocks.sweep(housekeeping::referencedBlocks);
        }
    }

    // ---------------------------------------------------------------- helpers

    private void ensureOpen() {
        if (closed) {
            throw new ViperClosedException("PFS repository " + root + " is closed");
        }
    }

    private Path modelDir(String model) {
        return reader.modelDir(model);
    }

    private Object lockFor(String model) {
        return modelLocks.computeIfAbsent(model, m -> new Object());
    }

    /** The local path of a {@code file://} location; {@link ViperConfigException} when it is none. */
    static Path pathOf(Location location) {
        if (!"file".equals(location.scheme())) {
            throw new ViperConfigException("location '" + location.uri() + "' is not a file:// location");
        }
        try {
            return Path.of(location.uri());
        } catch (IllegalArgumentException | FileSystemNotFoundException e) {
            throw new ViperConfigException(
                    "location '" + location.uri() + "' is not a file URI of an absolute local path: " + e.getMessage());
        }
    }
}
