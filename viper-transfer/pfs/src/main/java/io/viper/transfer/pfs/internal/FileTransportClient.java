package io.viper.transfer.pfs.internal;

import io.viper.errors.IoProblems;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperNotFoundException;
import io.viper.format.SafetensorsHeader;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Reads checkpoints from safetensors files of the PFS repository ({@code file://} locations), or, for a version the
 * repository keeps as blocks (no file at the location), from its block store ({@link BlockReader}; mapped in place by
 * {@link MappedBlocks}).
 *
 * <p>Every read or map memory-maps the file read-only, validates its header and checks that it describes exactly the
 * manifest's tensors (names, dtypes, shapes, offsets) before any byte is used. For a file, "the producer holds the
 * bytes" means "the file exists": a file that is gone (deleted by retention, or not stored yet) fails with a
 * {@link ViperNotFoundException}, so that the consumer moves on to a newer version or another location; a malformed or
 * mismatching file fails with a {@link ViperFormatException} naming it. A mapping survives the deletion of its file
 * (POSIX unlink semantics), so a consumer serving from {@link #map} is not disturbed by retention. The repository never
 * rewrites or truncates a file in place; if something else truncates a mapped file, the JVM reports the access to the
 * missing pages as an {@link InternalError}, which {@link #read} turns into a retriable error (holders of a
 * {@link #map} result see it as it is).
 *
 * <p>Hot or cold, chosen per file by {@link Residency} ({@code mincore}): {@link #read} copies a file mostly in the
 * page cache from its mapping, and reads a cold one with {@link ParallelReader}'s parallel ranged reads, which fill the
 * device where copying from the mapping would fault its pages in one at a time; the mapping {@link #map} hands out
 * brings a cold file into memory with the same parallel reads ({@link Prefetch}) when the consumer asks
 * ({@link MappedData#populate}), reporting each piece as it lands, so that the consumer verifies it while the rest is
 * read instead of after (docs/architecture.md#pfs-io).
 *
 * <p>Thread-safe; holds no resources besides the mappings it hands out.
 */
public final class FileTransportClient implements TransportClient.ArrivalReporting {
    private volatile boolean closed;

    /** A client; it has no settings. */
    public FileTransportClient() {}

    /** Reports each range (of a file) or each block's part of it (of a version kept as blocks) as it is in. */
    @Override
    public void read(
            Manifest manifest,
            Location location,
            List<ByteRange> ranges,
            MemorySegment destination,
            Arrivals arrivals) {
        Objects.requireNonNull(manifest, "manifest");
        Objects.requireNonNull(ranges, "ranges");
        Objects.requireNonNull(destination, "destination");
        ensureOpen();
        Path file = PfsRepository.pathOf(location);
        checkRanges(manifest, ranges, destination, file);
        if (keptAsBlocks(manifest, file)) {
            try (BlockReader blocks = new BlockReader(manifest, file)) {
                blocks.read(ranges, destination, arrivals);
            }
            return;
        }
        try (FileChannel ch = open(manifest, file);
                Arena arena = Arena.ofConfined()) {
            Mapped mapped = mapAndCheck(manifest, file, ch, arena);
            if (!Residency.hot(mapped.file())) {
                // cold: parallel ranged reads fill the device; faulting the mapping's pages would not
                ParallelReader.read(ch, file, mapped.dataStart(), ranges, destination, arrivals);
                return;
            }
            try {
                for (ByteRange r : ranges) {
                    MemorySegment.copy(
                            mapped.file(),
                            mapped.dataStart() + r.sourceOffset(),
                            destination,
                            r.destinationOffset(),
                            r.length());
                    arrivals.arrived(r.destinationOffset(), r.length());
                }
            } catch (InternalError fault) {
                throw truncatedUnderneath(file, fault);
            }
        } catch (IOException e) {
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER, file + ": cannot read: " + IoProblems.describe(e), e);
        }
    }

    /**
     * Maps a version's safetensors file, or, for a version kept as blocks, its block files in place as one data section
     * ({@link MappedBlocks}); empty for a version kept as blocks that mostly do not start on page boundaries, which the
     * consumer reads (only the blocks it does not hold) with {@link #read}.
     */
    @Override
    public Optional<MappedData> map(Manifest manifest, Location location) {
        Objects.requireNonNull(manifest, "manifest");
        ensureOpen();
        Path file = PfsRepository.pathOf(location);
        if (keptAsBlocks(manifest, file)) {
            return MappedBlocks.map(new BlockReader(manifest, file), manifest.totalBytes());
        }
        Arena arena = Arena.ofShared();
        FileChannel ch = open(manifest, file);
        try {
            Mapped mapped;
            try {
                mapped = mapAndCheck(manifest, file, ch, arena);
            } catch (IOException e) {
                throw new RetriableViperException(
                        ViperException.Reason.TRANSFER, file + ": cannot read: " + IoProblems.describe(e), e);
            }
            return Optional.of(new MappedFile(file, arena, mapped, manifest.totalBytes()));
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        } finally {
            closeQuietly(ch); // the mapping outlives it; the reads ahead open the file again (Prefetch)
        }
    }

    /**
     * A file mapped in place. Cold ({@link Residency}), {@link #populate} brings it in with {@link Prefetch}'s parallel
     * reads and reports each piece as it is in; hot, at once.
     */
    private static final class MappedFile implements MappedData {
        private final Path file;
        private final Arena arena;
        private final Mapped mapped;
        private final MemorySegment data;
        private final AtomicBoolean released = new AtomicBoolean();

        MappedFile(Path file, Arena arena, Mapped mapped, long dataBytes) {
            this.file = file;
            this.arena = arena;
            this.mapped = mapped;
            this.data = mapped.file().asSlice(mapped.dataStart(), dataBytes).asReadOnly();
        }

        @Override
        public MemorySegment data() {
            return data;
        }

        @Override
        public void populate(Arrivals arrivals) {
            try {
                if (Residency.hot(mapped.file())) {
                    arrivals.arrived(0, data.byteSize());
                    return;
                }
                // cold: parallel reads, not one fault at a time; each piece of the file reported as its data part
                long start = mapped.dataStart();
                long end = start + data.byteSize();
                TransportClient.Arrivals serial = ParallelReader.serialized(arrivals);
                Prefetch.populate(mapped.file(), file, (from, length) -> {
                    long a = Math.max(from, start);
                    long b = Math.min(from + length, end);
                    if (b > a) {
                        serial.arrived(a - start, b - a);
                    }
                });
            } catch (IOException e) {
                throw new RetriableViperException(
                        ViperException.Reason.TRANSFER, file + ": cannot read: " + IoProblems.describe(e), e);
            }
        }

        @Override
        public void close() {
            if (released.compareAndSet(false, true)) {
                arena.close();
            }
        }

        @Override
        public String toString() {
            return "MappedData[" + file + ", " + data.byteSize() + " bytes]";
        }
    }

    private static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException e) {
            // read-only: nothing was written that a failed close could lose
        }
    }

    /** Marks the client closed; later reads throw. Mappings handed out stay valid until they are closed. Idempotent. */
    @Override
    public void close() {
        closed = true;
    }

    private record Mapped(MemorySegment file, long dataStart) {}

    /** Whether the repository keeps this version in its block store: it has blocks and no safetensors file. */
    private static boolean keptAsBlocks(Manifest manifest, Path file) {
        return manifest.blockBytes() > 0 && !Files.exists(file);
    }

    /** Opens {@code file} for reading: not found when it is gone. */
    private static FileChannel open(Manifest manifest, Path file) {
        try {
            return FileChannel.open(file, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new ViperNotFoundException(
                    file + ": not found: " + manifest.model() + " v" + manifest.version()
                            + " was deleted by retention or is not stored yet",
                    e);
        } catch (IOException e) {
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER, file + ": cannot read: " + IoProblems.describe(e), e);
        }
    }

    /**
     * Maps {@code file}, open as {@code ch}, read-only in {@code arena}, validates it with viper-core's safetensors
     * parser (the one {@code viper inspect} uses, so both refuse the same files for the same reason) and checks its
     * header against {@code manifest}.
     */
    private static Mapped mapAndCheck(Manifest manifest, Path file, FileChannel ch, Arena arena) throws IOException {
        MemorySegment segment = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
        try {
            SafetensorsHeader header = SafetensorsHeader.parse(file.toString(), segment);
            ManifestMatch.check(header, manifest, file.toString());
            return new Mapped(segment, header.dataStart());
        } catch (InternalError fault) {
            throw truncatedUnderneath(file, fault);
        }
    }

    /**
     * The failure of an access to a mapping of {@code what} that raised SIGBUS (reported as {@code InternalError}): its
     * file was truncated underneath, and a later read may find it whole again.
     */
    static RetriableViperException truncatedUnderneath(Object what, InternalError fault) {
        return new RetriableViperException(
                ViperException.Reason.TRANSFER, what + ": the file changed (was truncated) while it was read", fault);
    }

    private static void checkRanges(Manifest manifest, List<ByteRange> ranges, MemorySegment destination, Path file) {
        if (destination.isReadOnly()) {
            throw new ViperConfigException("read " + file + ": the destination segment is read-only");
        }
        long total = manifest.totalBytes();
        for (ByteRange r : ranges) {
            if (r.length() > total || r.sourceOffset() > total - r.length()) {
                throw new ViperConfigException("read " + file + ": range " + r + " lies outside the " + total
                        + "-byte data section of " + manifest.model() + " v" + manifest.version());
            }
            if (r.length() > destination.byteSize() || r.destinationOffset() > destination.byteSize() - r.length()) {
                throw new ViperConfigException("read " + file + ": range " + r + " lies outside the "
                        + destination.byteSize() + "-byte destination");
            }
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new ViperClosedException("file:// transport client is closed");
        }
    }
}
