package io.viper.transfer.pfs.internal;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.format.SafetensorsHeader;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.StagedCheckpoint;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.Lock;
import java.util.regex.Pattern;

/**
 * The PFS checkpoint repository (docs/architecture.md#pfs-repository): {@code <root>/<model>/<version>/model.safetensors}
 * (a standard safetensors file) and {@code manifest.json} (the {@link ManifestCodec} encoding, its
 * location the file), with {@code <root>/<model>/LATEST} naming the newest complete version.
 *
 * <p>Writing a version: both files are written into {@code <root>/<model>/.tmp-<version>-<random>},
 * each fsynced, the directory fsynced, then renamed to {@code <version>} (atomic) and the model
 * directory fsynced; only then is {@code LATEST} replaced (temporary file, fsync, atomic rename),
 * and only forward. Retention then keeps the newest {@code retention} versions, never the one
 * {@code LATEST} names; a doomed version is first renamed to {@code .del-*} (atomically invisible),
 * then deleted. A reader reads {@code LATEST}, then the complete directory it names, so it never sees
 * a partial version. A failed store deletes its temporary directory and leaves every earlier version
 * and {@code LATEST} as they were. Entries that are not decimal version directories are ignored.
 * When a producer starts, {@link #recover} removes what a crashed writer left ({@code .tmp-*}) and
 * moves {@code LATEST} to a complete version it does not name yet; between starts, {@code .tmp-*}
 * directories older than an hour are removed by the next store of that model.
 *
 * <p>A version whose manifest has blocks is kept as blocks instead of a safetensors file: its
 * directory holds the manifest only, and its bytes are in the shared {@link BlockStore} under
 * {@code <root>/.blocks}, each distinct block once; the manifest is written first, the blocks it
 * lacks next, all durable before the rename commits the version. When retention deleted a version,
 * the store deletes the blocks no remaining version refers to.
 *
 * <p>Thread-safe. Within one process, stores of one model are serialised where they move
 * {@code LATEST}; the repository assumes one producer process per model per root (no file locks,
 * which many parallel file systems do not offer).
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
    /** Default chunk of the data section written per call. */
    static final int DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024;

    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    private static final Pattern VERSION_NAME = Pattern.compile("[1-9][0-9]{0,18}");
    private static final boolean WINDOWS = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("windows");

    private final Path root;
    private final int retention;
    private final int chunkBytes;
    private final WriteHooks hooks;
    private final BlockStore blocks;
    private final ConcurrentHashMap<String, Object> modelLocks = new ConcurrentHashMap<>();
    private final Set<String> warned = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /**
     * A repository rooted at the existing directory {@code root}, keeping the newest {@code retention}
     * versions of each model.
     */
    public PfsRepository(Path root, int retention) {
        this(root, retention, DEFAULT_CHUNK_BYTES, WriteHooks.NONE);
    }

    PfsRepository(Path root, int retention, int chunkBytes, WriteHooks hooks) {
        this(root, retention, chunkBytes, hooks, STALE_AFTER);
    }

    /** As above; an unreferenced block is deleted once untouched for {@code blockGrace} (see {@link BlockStore}). */
    PfsRepository(Path root, int retention, int chunkBytes, WriteHooks hooks, Duration blockGrace) {
        this.root = root.toAbsolutePath().normalize();
        if (retention < 1) {
            throw new ViperConfigException("PFS repository " + this.root + ": retention must be at least 1, got " + retention);
        }
        if (chunkBytes < 1) {
            throw new IllegalArgumentException("chunkBytes " + chunkBytes);
        }
        this.retention = retention;
        this.chunkBytes = chunkBytes;
        this.hooks = Objects.requireNonNull(hooks, "hooks");
        this.blocks = new BlockStore(this.root, blockGrace, hooks);
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
        return locationOf(versionDir(model, version));
    }

    @Override
    public Optional<Location> locate(String model, long version) {
        return Optional.of(locationOf(model, version));
    }

    @Override
    public Location store(Manifest manifest, StagedCheckpoint staged) {
        Objects.requireNonNull(manifest, "manifest");
        Objects.requireNonNull(staged, "staged");
        ensureOpen();
        String model = manifest.model();
        long version = manifest.version();
        if (!model.equals(staged.model()) || version != staged.version()) {
            throw new ViperConfigException("store: the manifest is " + model + " v" + version + " but the staged checkpoint is "
                    + staged.model() + " v" + staged.version());
        }
        MemorySegment data = staged.data();
        if (data.byteSize() != manifest.totalBytes()) {
            throw new ViperConfigException("store: the staged data of " + model + " v" + version + " holds " + data.byteSize()
                    + " bytes but the manifest's tensors need " + manifest.totalBytes());
        }
        Path modelDir = root.resolve(model);
        Path versionDir = modelDir.resolve(Long.toString(version));
        Location location = locationOf(versionDir);
        byte[] head = safetensorsHead(manifest);
        byte[] manifestBytes = ManifestCodec.encode(manifest.replaceLocations(List.of(location)));
        Path tmp = null;
        // A version with blocks keeps its bytes in the block store: no sweep may run from before its
        // manifest is written until it is committed.
        Lock writingBlocks = manifest.blockBytes() > 0 ? blocks.writing().readLock() : null;
        boolean locked = false;
        boolean retired = false;
        Map<ContentHash, FileTime> freshBlocks = new HashMap<>();
        try {
            if (!Files.isDirectory(modelDir)) {
                Files.createDirectories(modelDir);
                fsyncDirectory(root);
            }
            cleanStale(modelDir, Instant.now().minus(STALE_AFTER));
            synchronized (lockFor(model)) {
                if (alreadyStored(manifest, versionDir)) {
                    publishLatest(modelDir, version);
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
                writeSmallFile(tmp.resolve(MANIFEST_FILE), manifestBytes); // first: a sweep counts its blocks as referenced from now on
                blocks.put(manifest, data, freshBlocks);
            } else {
                writeDataFile(tmp.resolve(DATA_FILE), head, data);
                writeSmallFile(tmp.resolve(MANIFEST_FILE), manifestBytes);
            }
            fsyncDirectory(tmp);
            hooks.beforeCommit(tmp);
            synchronized (lockFor(model)) {
                if (!alreadyStored(manifest, versionDir)) {
                    Files.move(tmp, versionDir, StandardCopyOption.ATOMIC_MOVE);
                    tmp = null;
                    fsyncDirectory(modelDir);
                    LOG.log(Level.INFO, "stored {0} v{1} ({2} bytes) in {3}", model, Long.toString(version), Long.toString(manifest.totalBytes()), versionDir);
                }
                publishLatest(modelDir, version);
                retired = applyRetention(model, modelDir);
            }
            return location;
        } catch (IOException e) {
            throw new ViperException(ViperException.Reason.IO, "cannot store " + model + " v" + version + " in " + versionDir + ": " + IoProblems.describe(e), e);
        } catch (IllegalStateException | IndexOutOfBoundsException e) {
            throw new ViperException(ViperException.Reason.INTERNAL, "cannot store " + model + " v" + version + " in " + versionDir
                    + ": the staged data became unreadable during the copy (" + e.getMessage() + ")", e);
        } finally {
            boolean notCommitted = tmp != null;
            if (tmp != null) {
                deleteTreeQuietly(tmp);
            }
            if (locked) {
                writingBlocks.unlock();
            }
            if (notCommitted && !freshBlocks.isEmpty()) {
                blocks.discard(freshBlocks, this::referencedBlocks); // a full disk must not stay full of blocks nobody names
            }
            if (retired) {
                blocks.sweep(this::referencedBlocks);
            }
        }
    }

    /**
     * A producer of {@code model} starts: removes every temporary entry ({@code .tmp-*}, {@code .del-*},
     * {@code .LATEST.tmp-*}: with one producer per model per root, none is in use), then moves
     * {@code LATEST} forward to the newest complete version (one a crash or a full disk kept it from
     * naming) and returns that version, 0 when none.
     */
    @Override
    public long recover(String model) {
        ensureOpen();
        Path modelDir = modelDir(model);
        if (!Files.isDirectory(modelDir, LinkOption.NOFOLLOW_LINKS)) {
            return 0;
        }
        synchronized (lockFor(model)) {
            cleanStale(modelDir, Instant.MAX);
            List<Long> versions = versions(model);
            if (versions.isEmpty()) {
                return 0;
            }
            long newest = versions.getLast();
            OptionalLong named = readLatest(modelDir);
            if (named.isEmpty() || named.getAsLong() < newest) {
                try {
                    publishLatest(modelDir, newest);
                    LOG.log(Level.INFO, "{0}: named v{1}, the newest complete version, left unnamed by an interrupted store", modelDir.resolve(LATEST_FILE),
                            Long.toString(newest));
                } catch (IOException e) {
                    LOG.log(Level.WARNING, "cannot move {0} to v{1}: {2}; readers keep the version it names", modelDir.resolve(LATEST_FILE),
                            Long.toString(newest), IoProblems.describe(e));
                }
            }
            return newest;
        }
    }

    @Override
    public Optional<Manifest> latest(String model) {
        ensureOpen();
        Path modelDir = modelDir(model);
        OptionalLong named = readLatest(modelDir);
        for (int attempt = 0; named.isPresent() && attempt < 5; attempt++) {
            Optional<Manifest> m = readVersion(model, named.getAsLong());
            if (m.isPresent()) {
                return m;
            }
            // Retention may have removed it after LATEST moved on: read LATEST again.
            OptionalLong again = readLatest(modelDir);
            if (again.equals(named)) {
                warnOnce(modelDir.resolve(LATEST_FILE) + ": names version " + named.getAsLong()
                        + ", which is missing or invalid; using the newest complete version instead");
                break;
            }
            named = again;
        }
        List<Long> versions = versions(model);
        for (int i = versions.size() - 1; i >= 0; i--) {
            Optional<Manifest> m = readVersion(model, versions.get(i));
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
        return readVersion(model, version);
    }

    @Override
    public List<Long> versions(String model) {
        ensureOpen();
        Path modelDir = modelDir(model);
        List<Long> out = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(modelDir)) {
            for (Path p : entries) {
                String name = p.getFileName().toString();
                if (!VERSION_NAME.matcher(name).matches()) {
                    continue;
                }
                long v;
                try {
                    v = Long.parseLong(name);
                } catch (NumberFormatException tooLarge) {
                    continue;
                }
                if (readVersion(model, v).isPresent()) {
                    out.add(v);
                }
            }
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (IOException e) {
            throw new ViperException(ViperException.Reason.IO, "cannot list the versions of " + model + " in " + modelDir + ": " + IoProblems.describe(e), e);
        }
        Collections.sort(out);
        return List.copyOf(out);
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

    // ---------------------------------------------------------------- reading

    /** The manifest of a complete, valid version directory, with its location here; empty (logged) otherwise. */
    private Optional<Manifest> readVersion(String model, long version) {
        Path dir = versionDir(model, version);
        Path manifestFile = dir.resolve(MANIFEST_FILE);
        byte[] bytes;
        try {
            if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                return Optional.empty();
            }
            long size = Files.size(manifestFile);
            if (size > ManifestCodec.MAX_ENCODED_BYTES) {
                warnOnce(manifestFile + ": manifest of " + size + " bytes exceeds the limit of " + ManifestCodec.MAX_ENCODED_BYTES + "; version skipped");
                return Optional.empty();
            }
            bytes = Files.readAllBytes(manifestFile);
        } catch (NoSuchFileException e) {
            if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                warnOnce(dir + ": version directory without " + MANIFEST_FILE + "; skipped");
            }
            return Optional.empty();
        } catch (IOException e) {
            warnOnce(manifestFile + ": cannot read: " + IoProblems.describe(e) + "; version skipped");
            return Optional.empty();
        }
        Manifest m;
        try {
            m = ManifestCodec.decode(bytes, manifestFile.toString());
        } catch (ViperFormatException e) {
            warnOnce(e.getMessage() + "; version skipped");
            return Optional.empty();
        }
        if (!m.model().equals(model) || m.version() != version) {
            warnOnce(manifestFile + ": holds " + m.model() + " v" + m.version() + ", not " + model + " v" + version + "; version skipped");
            return Optional.empty();
        }
        if (m.blockBytes() == 0 && !Files.isRegularFile(dir.resolve(DATA_FILE))) {
            if (Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
                warnOnce(dir + ": version directory without " + DATA_FILE + "; skipped");
            }
            return Optional.empty();
        }
        return Optional.of(m.replaceLocations(List.of(locationOf(dir))));
    }

    /** The version {@code LATEST} names; empty when it is absent or unreadable (logged). */
    private OptionalLong readLatest(Path modelDir) {
        Path file = modelDir.resolve(LATEST_FILE);
        byte[] bytes;
        try {
            if (Files.size(file) > 64) {
                warnOnce(file + ": is larger than a version number; ignored");
                return OptionalLong.empty();
            }
            bytes = Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            return OptionalLong.empty();
        } catch (IOException e) {
            warnOnce(file + ": cannot read: " + IoProblems.describe(e) + "; ignored");
            return OptionalLong.empty();
        }
        String text = new String(bytes, StandardCharsets.US_ASCII).strip();
        if (VERSION_NAME.matcher(text).matches()) {
            try {
                return OptionalLong.of(Long.parseLong(text));
            } catch (NumberFormatException tooLarge) {
                // falls through to the warning
            }
        }
        warnOnce(file + ": does not hold a version number; ignored");
        return OptionalLong.empty();
    }

    // ---------------------------------------------------------------- writing

    /**
     * Whether {@code versionDir} already holds this version with the same tensors and metadata (a
     * repeated store: nothing to write). Throws when it holds something else.
     */
    private boolean alreadyStored(Manifest manifest, Path versionDir) {
        if (!Files.exists(versionDir, LinkOption.NOFOLLOW_LINKS)) {
            return false;
        }
        Optional<Manifest> existing = readVersion(manifest.model(), manifest.version());
        if (existing.isEmpty()) {
            throw new ViperException(ViperException.Reason.IO, "cannot store " + manifest.model() + " v" + manifest.version() + ": "
                    + versionDir + " exists but holds no valid version; remove it to store this version again");
        }
        if (!existing.get().sameContent(manifest)) {
            throw new ViperConfigException("cannot store " + manifest.model() + " v" + manifest.version() + ": " + versionDir
                    + " already holds this version with different tensors or metadata");
        }
        LOG.log(Level.DEBUG, "{0} v{1} is already stored in {2}", manifest.model(), Long.toString(manifest.version()), versionDir);
        return true;
    }

    /** Refuses a version that retention would delete at once (at least {@code retention} newer versions exist). */
    private void checkRetentionWindow(String model, long version) {
        List<Long> versions = versions(model);
        List<Long> newer = versions.stream().filter(v -> v > version).toList();
        if (newer.size() >= retention) {
            throw new ViperConfigException("cannot store " + model + " v" + version + ": " + newer.size() + " newer versions are stored "
                    + newer + " and retention keeps " + retention + " (viper.pfs.retention), so it would be deleted at once");
        }
    }

    /**
     * The length prefix and JSON header of {@code manifest}'s safetensors file, from viper-core's
     * encoder (the one {@code SafetensorsWriter} uses); the staged data section follows it as is.
     */
    private static byte[] safetensorsHead(Manifest manifest) {
        List<TensorInfo> layout = manifest.tensors().stream().map(TensorEntry::info).toList();
        try {
            return SafetensorsHeader.encode(layout, manifest.metadata());
        } catch (IllegalArgumentException e) {
            throw new ViperConfigException("cannot store " + manifest.model() + " v" + manifest.version() + " as safetensors: "
                    + e.getMessage(), e);
        }
    }

    private void writeDataFile(Path file, byte[] head, MemorySegment data) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            writeFully(ch, ByteBuffer.wrap(head));
            long total = data.byteSize();
            for (long pos = 0; pos < total; pos += chunkBytes) {
                hooks.beforeChunk(file, pos);
                long length = Math.min(chunkBytes, total - pos);
                writeFully(ch, data.asSlice(pos, length).asByteBuffer());
            }
            ch.force(true);
        }
    }

    private static void writeSmallFile(Path file, byte[] bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            writeFully(ch, ByteBuffer.wrap(bytes));
            ch.force(true);
        }
    }

    private static void writeFully(FileChannel ch, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            ch.write(buffer);
        }
    }

    /** Moves {@code LATEST} to {@code version} unless it already names that or a newer version. Call under the model lock. */
    private void publishLatest(Path modelDir, long version) throws IOException {
        OptionalLong current = readLatest(modelDir);
        if (current.isPresent() && current.getAsLong() >= version) {
            return;
        }
        hooks.beforeLatest(modelDir);
        Path tmp = modelDir.resolve(LATEST_TMP_PREFIX + randomSuffix());
        try {
            writeSmallFile(tmp, (version + "\n").getBytes(StandardCharsets.US_ASCII));
            Files.move(tmp, modelDir.resolve(LATEST_FILE), StandardCopyOption.ATOMIC_MOVE);
            tmp = null;
            fsyncDirectory(modelDir);
        } finally {
            if (tmp != null) {
                deleteTreeQuietly(tmp);
            }
        }
        LOG.log(Level.DEBUG, "{0} now names version {1}", modelDir.resolve(LATEST_FILE), Long.toString(version));
    }

    /**
     * Keeps the newest {@code retention} versions and the one LATEST names. Call under the model lock,
     * after LATEST moved; package-private for tests. Returns whether it deleted a version (whose
     * blocks the caller then sweeps, outside the lock).
     */
    boolean applyRetention(String model, Path modelDir) {
        List<Long> versions = versions(model);
        if (versions.size() <= retention) {
            return false;
        }
        boolean deleted = false;
        OptionalLong latest = readLatest(modelDir);
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
            LOG.log(Level.INFO, "retention: deleted {0} v{1} (keeping the newest {2})", model, Long.toString(v), Long.toString(retention));
        }
        return deleted;
    }

    /**
     * The ids of every block a version of any model refers to, complete or being stored
     * ({@code .tmp-*}); null when a manifest could not be read, so that nothing is deleted on a guess.
     */
    private Set<ContentHash> referencedBlocks() {
        Set<ContentHash> ids = new HashSet<>();
        try (DirectoryStream<Path> models = Files.newDirectoryStream(root, p -> !p.getFileName().toString().startsWith("."))) {
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
            LOG.log(Level.WARNING, "block store of {0}: no block deleted, since a manifest could not be read: {1}", root,
                    e instanceof IOException io ? IoProblems.describe(io) : e.getMessage());
            return null;
        }
        return ids;
    }

    /** Removes {@code .del-*} leftovers and temporary entries untouched since {@code staleBefore}. */
    private void cleanStale(Path modelDir, Instant staleBefore) {
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(modelDir, e -> {
            String n = e.getFileName().toString();
            return n.startsWith(TMP_PREFIX) || n.startsWith(DEL_PREFIX) || n.startsWith(LATEST_TMP_PREFIX);
        })) {
            for (Path p : entries) {
                boolean doomed = p.getFileName().toString().startsWith(DEL_PREFIX) || newestModification(p).isBefore(staleBefore);
                if (doomed) {
                    deleteTreeQuietly(p);
                    LOG.log(Level.INFO, "removed {0}, left by an interrupted write or deletion", p);
                }
            }
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot clean temporary entries of {0}: {1}", modelDir, IoProblems.describe(e));
        }
    }

    /** The newest modification time of {@code p} and, for a directory, its direct entries. */
    private static Instant newestModification(Path p) throws IOException {
        Instant newest = Files.getLastModifiedTime(p, LinkOption.NOFOLLOW_LINKS).toInstant();
        if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(p)) {
                for (Path e : entries) {
                    Instant t = Files.getLastModifiedTime(e, LinkOption.NOFOLLOW_LINKS).toInstant();
                    if (t.isAfter(newest)) {
                        newest = t;
                    }
                }
            } catch (NoSuchFileException gone) {
                return newest;
            }
        }
        return newest;
    }

    // ---------------------------------------------------------------- helpers

    private void ensureOpen() {
        if (closed) {
            throw new ViperClosedException("PFS repository " + root + " is closed");
        }
    }

    private Path modelDir(String model) {
        return root.resolve(Manifest.validateModelName(model));
    }

    private Path versionDir(String model, long version) {
        return modelDir(model).resolve(Long.toString(version));
    }

    private Object lockFor(String model) {
        return modelLocks.computeIfAbsent(model, m -> new Object());
    }

    private static Location locationOf(Path versionDir) {
        return new Location(versionDir.resolve(DATA_FILE).toUri(), Tier.PFS);
    }

    /** The local path of a {@code file://} location; {@link ViperConfigException} when it is none. */
    static Path pathOf(Location location) {
        if (!"file".equals(location.scheme())) {
            throw new ViperConfigException("location '" + location.uri() + "' is not a file:// location");
        }
        try {
            return Path.of(location.uri());
        } catch (IllegalArgumentException | FileSystemNotFoundException e) {
            throw new ViperConfigException("location '" + location.uri() + "' is not a file URI of an absolute local path: " + e.getMessage());
        }
    }

    static void fsyncDirectory(Path dir) throws IOException {
        if (WINDOWS) {
            return; // directories cannot be opened for fsync there; NTFS journals the rename
        }
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    private static String randomSuffix() {
        return Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    private static void deleteTreeQuietly(Path top) {
        try {
            Files.walkFileTree(top, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult visitFileFailed(Path file, IOException e) throws IOException {
                    if (e instanceof NoSuchFileException) {
                        return FileVisitResult.CONTINUE;
                    }
                    throw e;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                    Files.deleteIfExists(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot delete {0}: {1}", top, IoProblems.describe(e));
        }
    }

    private void warnOnce(String message) {
        LOG.log(warned.add(message) ? Level.WARNING : Level.DEBUG, message);
    }
}
