package io.viper.format;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.Tensor;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Writes checkpoints as standard safetensors files, readable by the reference implementation and by
 * {@link SafetensorsFile}.
 *
 * <p>The header is compact JSON with {@code __metadata__} first (omitted when there is no metadata) and the tensors in
 * data order, padded with spaces to a multiple of 8 bytes like the reference writer. The tensor bytes are then streamed
 * from their {@link MemorySegment}s through a {@link FileChannel} in chunks of at most 16 MiB (native and mapped
 * segments are written without any copy; heap segments go through one reused chunk-sized buffer), and the file is
 * forced to storage before it is closed.
 *
 * <p>{@link #write} writes the file in place at the given path: a reader that opens it while it is being written sees a
 * partial file (which {@link SafetensorsFile} refuses), and on failure the partial file is deleted, so no file is left
 * where one may have been; a device is written to but never deleted ({@code /dev/null} took a short write and lost its
 * node). {@link #replace} writes to a temporary name in the same directory and renames it over the path: readers see
 * the old file or the whole new one, and a failure leaves the old one as it was. Both refuse a directory, a FIFO or a
 * socket before opening it (opening a FIFO for writing blocks until a reader comes), and {@code replace} a device too.
 * Neither writes through a symbolic link (one another user planted in a shared directory would aim the write at any
 * file): {@code write} refuses a link at the path and opens it with {@code O_NOFOLLOW}; {@code replace} creates its
 * temporary file new ({@code O_EXCL}) and its rename replaces a link at the path rather than following it. Never write
 * over a file whose mapping backs the tensors being written.
 *
 * <p>Threads: stateless; concurrent calls for different paths are safe. The tensors' memory must stay valid and
 * unchanged until the call returns; the writer does not take ownership of it.
 */
public final class SafetensorsWriter {
    /** The largest slice of a tensor handed to the channel in one write. */
    static final int CHUNK_BYTES = 16 << 20;

    /** The file type bits of {@code st_mode} (stat(2)), and the types of a character and a block device. */
    private static final int S_IFMT = 0170000;

    private static final int S_IFCHR = 0020000;
    private static final int S_IFBLK = 0060000;

    /** Numbers the temporary files of {@link #replace} within this process. */
    private static final AtomicLong TEMPORARIES = new AtomicLong();

    private SafetensorsWriter() {}

    /**
     * Writes {@code checkpoint}'s tensors (in its data order) and metadata to {@code path}, replacing any file there,
     * and returns the number of bytes written (the file size).
     *
     * @throws ViperConfigException when the tensors cannot form a safetensors header (a tensor named
     *     {@code __metadata__}, a header above 100,000,000 bytes)
     * @throws ViperFormatException when {@code path} is a directory, a FIFO or a socket
     * @throws ViperException with reason {@link ViperException.Reason#IO} when writing fails
     */
    public static long write(Path path, Checkpoint checkpoint) {
        Objects.requireNonNull(checkpoint, "checkpoint");
        return write(path, checkpoint.tensors(), checkpoint.metadata());
    }

    /**
     * Writes {@code tensors} in list order (their offsets are laid out contiguously from 0; the offsets in their infos
     * are ignored) and {@code metadata} (in its iteration order) to {@code path}, replacing any file there, and returns
     * the file size.
     *
     * @throws ViperConfigException when a name repeats or is {@code __metadata__}, or the header exceeds 100,000,000
     *     bytes
     * @throws ViperFormatException when {@code path} is a directory, a FIFO, a socket or a symbolic link
     * @throws ViperException with reason {@link ViperException.Reason#IO} when writing fails
     */
    public static long write(Path path, List<Tensor> tensors, Map<String, String> metadata) {
        Objects.requireNonNull(path, "path");
        return writeFile(path, tensors, metadata);
    }

    /**
     * Writes {@code checkpoint} as {@link #replace(Path, List, Map)} does.
     *
     * @throws ViperConfigException when the tensors cannot form a safetensors header
     * @throws ViperFormatException when {@code path} is a directory, a FIFO, a socket or a device
     * @throws ViperException with reason {@link ViperException.Reason#IO} when writing or renaming fails
     */
    public static long replace(Path path, Checkpoint checkpoint) {
        Objects.requireNonNull(checkpoint, "checkpoint");
        return replace(path, checkpoint.tensors(), checkpoint.metadata());
    }

    /**
     * Writes as {@link #write(Path, List, Map)} does, but to a new file beside {@code path} ({@code .NAME.PID.N.tmp})
     * that is forced to storage and then renamed over {@code path} in one step: a reader sees the file that was there
     * or the whole new one, and a failure (a full disk, tensors that cannot form a header, memory that went away)
     * leaves the file that was there untouched and no temporary file behind. Returns the file size.
     *
     * @throws ViperConfigException when a name repeats or is {@code __metadata__}, or the header exceeds 100,000,000
     *     bytes
     * @throws ViperFormatException when {@code path} is a directory, a FIFO, a socket or a device
     * @throws ViperException with reason {@link ViperException.Reason#IO} when writing or renaming fails
     */
    public static long replace(Path path, List<Tensor> tensors, Map<String, String> metadata) {
        Objects.requireNonNull(path, "path");
        // A rename would put a regular file where a device or a FIFO was: refused, as write refuses most of them. A
        // link is not looked through: the rename replaces the link itself.
        if (!Files.isSymbolicLink(path)) {
            IoProblems.notARegularFile(path).ifPresent(problem -> {
                throw new ViperFormatException(
                        path.toString(), problem + ", not a file to replace with a safetensors file");
            });
        }
        Layout layout = layout(path, tensors, metadata);
        Path target = path.toAbsolutePath();
        Path temporary = null;
        FileChannel channel = null;
        // A new file only (O_CREAT|O_EXCL, which follows no link): a link planted at the temporary name is skipped.
        for (int attempt = 0; channel == null; attempt++) {
            temporary = target.resolveSibling("." + target.getFileName() + "."
                    + ProcessHandle.current().pid() + "." + TEMPORARIES.incrementAndGet() + ".tmp");
            try {
                channel = FileChannel.open(
                        temporary, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
            } catch (FileAlreadyExistsException e) {
                if (attempt >= 99) {
                    throw failure(path, e);
                }
            } catch (IOException e) {
                throw failure(path, e); // nothing was created: nothing to clean up
            }
        }
        boolean renamed = false;
        try {
            writeData(channel, tensors, layout);
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            renamed = true;
            return layout.size();
        } catch (IOException e) {
            throw failure(path, e);
        } finally {
            if (!renamed) {
                deleteQuietly(temporary);
            }
        }
    }

    /** Writes the file at {@code path} in place, refusing a link there (it would be written through). */
    private static long writeFile(Path path, List<Tensor> tensors, Map<String, String> metadata) {
        if (Files.isSymbolicLink(path)) {
            throw new ViperFormatException(
                    path.toString(),
                    "is a symbolic link, not written through: remove it or write elsewhere (replace() swaps it)");
        }
        boolean device = isDevice(path);
        if (!device) {
            IoProblems.notARegularFile(path).ifPresent(problem -> {
                throw new ViperFormatException(
                        path.toString(), problem + ", not a file to write a safetensors file over");
            });
        }
        Layout layout = layout(path, tensors, metadata);
        FileChannel channel;
        try {
            // O_NOFOLLOW: a link planted after the check above is refused, not followed.
            channel = FileChannel.open(
                    path,
                    StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING,
                    LinkOption.NOFOLLOW_LINKS);
        } catch (IOException e) {
            throw failure(path, e); // nothing was created or changed: nothing to clean up
        }
        boolean done = false;
        try {
            writeData(channel, tensors, layout);
            done = true;
        } catch (IOException e) {
            throw failure(path, e);
        } finally {
            if (!done && !device) {
                deleteQuietly(path);
            }
        }
        return layout.size();
    }

    /** A safetensors header and the size of the whole file it heads. */
    private record Layout(byte[] head, long size) {}

    /** Lays {@code tensors} out contiguously and encodes their header; {@code shown} is the path failures name. */
    private static Layout layout(Path shown, List<Tensor> tensors, Map<String, String> metadata) {
        Objects.requireNonNull(tensors, "tensors");
        Objects.requireNonNull(metadata, "metadata");
        List<TensorInfo> infos = new ArrayList<>(tensors.size());
        long offset = 0;
        for (Tensor t : tensors) {
            infos.add(t.info().withOffset(offset));
            offset = Math.addExact(offset, t.byteSize());
        }
        try {
            byte[] head = SafetensorsHeader.encode(infos, metadata);
            return new Layout(head, head.length + offset);
        } catch (IllegalArgumentException e) {
            throw new ViperConfigException(shown + ": " + e.getMessage(), e);
        }
    }

    /** Writes the header and the tensors' bytes to {@code channel}, forces them to storage and closes it. */
    private static void writeData(FileChannel channel, List<Tensor> tensors, Layout layout) throws IOException {
        try (channel) {
            writeFully(channel, ByteBuffer.wrap(layout.head()));
            ByteBuffer staging = null;
            for (Tensor t : tensors) {
                MemorySegment data = t.data();
                long size = data.byteSize();
                for (long pos = 0; pos < size; pos += CHUNK_BYTES) {
                    int n = (int) Math.min(CHUNK_BYTES, size - pos);
                    MemorySegment chunk = data.asSlice(pos, n);
                    if (data.isNative()) {
                        writeFully(channel, chunk.asByteBuffer());
                    } else {
                        // A (read-only) heap segment may not be viewable as a ByteBuffer: copy chunk-wise.
                        if (staging == null || staging.capacity() < n) {
                            staging = ByteBuffer.allocateDirect(n);
                        }
                        staging.clear().limit(n);
                        MemorySegment.copy(chunk, 0, MemorySegment.ofBuffer(staging), 0, n);
                        writeFully(channel, staging);
                    }
                }
            }
            if (channel.position() != layout.size()) {
                throw new IOException("wrote " + channel.position() + " bytes, expected " + layout.size());
            }
            channel.force(true);
        }
    }

    private static ViperException failure(Path path, IOException e) {
        String reason;
        if (e instanceof NoSuchFileException) {
            reason = "no such directory";
        } else if (e instanceof AccessDeniedException) {
            reason = "permission denied";
        } else if (e instanceof FileSystemException fse && fse.getReason() != null) {
            reason = fse.getReason();
        } else {
            reason = String.valueOf(e.getMessage());
        }
        return new ViperException(ViperException.Reason.IO, path + ": cannot write: " + reason, e);
    }

    private static void writeFully(FileChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    /**
     * Whether {@code path} (links followed) is a character or block device, by its file type bits; false where the file
     * system has no unix attributes.
     */
    private static boolean isDevice(Path path) {
        if (!Files.exists(path) || Files.isRegularFile(path) || Files.isDirectory(path)) {
            return false;
        }
        try {
            int type = (Integer) Files.getAttribute(path, "unix:mode") & S_IFMT;
            return type == S_IFCHR || type == S_IFBLK;
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
            return false;
        }
    }

    private static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException | RuntimeException ignored) {
            // the original failure is what the caller needs to see
        }
    }
}
