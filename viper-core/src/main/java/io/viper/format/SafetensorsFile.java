package io.viper.format;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperNotFoundException;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.Tensor;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A safetensors file, memory-mapped read-only and validated.
 *
 * <p>{@link #open} maps the whole file with {@link FileChannel#map(FileChannel.MapMode, long, long, Arena)} into a
 * shared {@link Arena} (no copy into the Java heap; offsets are {@code long}, so files and tensors larger than 2 GiB
 * work) and validates it as the reference implementation (huggingface/safetensors) does: the header length (at most
 * 100,000,000 bytes, inside the file), a UTF-8 JSON object header, known dtypes, non-negative shapes whose byte size
 * fits 64 bits, {@code data_offsets} that cover the data section exactly (no overlap, no hole, no truncation, no
 * trailing bytes) with lengths equal to dtype size x element count, a {@code __metadata__} object of strings, and no
 * duplicate keys. A file that breaks a rule is refused with a {@link io.viper.errors.ViperFormatException} whose source
 * is the path as given and whose problem names the tensor where one applies.
 *
 * <p>Memory ownership: this object owns the mapping. The {@link Tensor}s it returns (and the {@link Checkpoint} from
 * {@link #checkpoint}) are read-only views of the mapped memory; they are valid until {@link #close()}, which unmaps
 * the file. Touching their bytes afterwards throws {@link IllegalStateException}; their {@link TensorInfo}s stay
 * usable. The file must not be truncated or rewritten in place while it is mapped (publish new versions under a new
 * name and rename, as the PFS repository does).
 *
 * <p>Threads: any thread may read the tensors while the file is open; the accessors are immutable views.
 * {@link #close()} may be called from any thread and more than once; close only after every reader is done, since a
 * reader racing with close gets {@link IllegalStateException}.
 */
public final class SafetensorsFile implements AutoCloseable {
    private final Path path;
    private final Arena arena;
    private final SafetensorsHeader header;
    private final List<Tensor> tensors;
    private final Map<String, Tensor> byName;
    private final AtomicBoolean closed = new AtomicBoolean();

    private SafetensorsFile(Path path, Arena arena, MemorySegment file, SafetensorsHeader header) {
        this.path = path;
        this.arena = arena;
        this.header = header;
        MemorySegment data = file.asSlice(header.dataStart(), header.dataBytes());
        List<Tensor> list = new ArrayList<>(header.tensors().size());
        Map<String, Tensor> index = new HashMap<>();
        for (TensorInfo info : header.tensors()) {
            Tensor t = new Tensor(info, data.asSlice(info.offset(), info.length()));
            list.add(t);
            index.put(info.name(), t);
        }
        this.tensors = Collections.unmodifiableList(list);
        this.byName = Collections.unmodifiableMap(index);
    }

    /**
     * Maps and validates the safetensors file at {@code path}.
     *
     * @throws ViperFormatException when the file is not a valid safetensors file, or not a regular file at all (a
     *     directory, a FIFO); such a path is refused without being opened
     * @throws io.viper.errors.ViperNotFoundException when there is no such file
     * @throws ViperException with reason {@link ViperException.Reason#IO} when it cannot be read or mapped
     */
    public static SafetensorsFile open(Path path) {
        Objects.requireNonNull(path, "path");
        String source = path.toString();
        IoProblems.notARegularFile(path).ifPresent(problem -> {
            throw new ViperFormatException(source, problem + ", not a safetensors file");
        });
        Arena arena = Arena.ofShared();
        try {
            MemorySegment file;
            try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
                file = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
            }
            SafetensorsHeader header = SafetensorsHeader.parse(source, file);
            return new SafetensorsFile(path, arena, file, header);
        } catch (NoSuchFileException e) {
            arena.close();
            throw new ViperNotFoundException(source + ": no such file", e);
        } catch (AccessDeniedException e) {
            arena.close();
            throw new ViperException(ViperException.Reason.IO, source + ": permission denied", e);
        } catch (IOException e) {
            arena.close();
            String reason =
                    e instanceof FileSystemException fse && fse.getReason() != null ? fse.getReason() : e.getMessage();
            throw new ViperException(ViperException.Reason.IO, source + ": cannot read: " + reason, e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /** The path this file was opened with. */
    public Path path() {
        return path;
    }

    /** The validated header: sizes, metadata and tensor layout (usable after close). */
    public SafetensorsHeader header() {
        return header;
    }

    /** The stored JSON header length, padding included (the file's first 8 bytes). */
    public long headerBytes() {
        return header.headerBytes();
    }

    /** The size of the data section: the sum of all tensor lengths. */
    public long dataBytes() {
        return header.dataBytes();
    }

    /** The size of the whole file. */
    public long fileBytes() {
        return header.fileBytes();
    }

    /** The {@code __metadata__} entries, in file order; empty when the file has none. */
    public SequencedMap<String, String> metadata() {
        return header.metadata();
    }

    /**
     * The tensors in data order (sorted by start offset, whatever order the JSON lists them in); offsets are relative
     * to the data section. Their bytes are views of the mapping, valid until {@link #close()}.
     */
    public List<Tensor> tensors() {
        return tensors;
    }

    /** The tensor called {@code name}, or null when the file has none; valid until {@link #close()}. */
    public Tensor tensor(String name) {
        return byName.get(name);
    }

    /**
     * A checkpoint of {@code model} at {@code version} that views this file's tensors and metadata (no copy). Like the
     * tensors, its bytes are valid until {@link #close()}.
     *
     * @throws ViperException with reason {@link ViperException.Reason#CLOSED} after close
     */
    public Checkpoint checkpoint(String model, long version) {
        if (closed.get()) {
            throw new ViperClosedException(path + ": safetensors file is closed");
        }
        return Checkpoint.of(model, version, tensors, header.metadata());
    }

    /** Whether {@link #close()} has not been called yet. */
    public boolean isOpen() {
        return !closed.get();
    }

    /** Unmaps the file; every tensor view becomes invalid. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "SafetensorsFile[" + path + ", " + tensors.size() + " tensors, " + header.dataBytes() + " data bytes"
                + (closed.get() ? ", closed" : "") + "]";
    }
}
