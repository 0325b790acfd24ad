package io.viper.agent.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The directory where the agent keeps its shared-memory files ({@code /dev/shm} by default): creates them owner-only
 * (0600) under names that carry the agent's pid, {@code viper-agent-<pid>-<n>-<kind>}, and removes the files that
 * agents no longer running left behind. {@link #close()} removes the files still open. Thread-safe.
 */
final class SharedMemory implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(SharedMemory.class.getName());
    private static final Pattern NAME = Pattern.compile("viper-agent-(\\d+)-\\d+-[a-z]+");

    private final Path dir;
    private final long pid = ProcessHandle.current().pid();
    private final AtomicLong sequence = new AtomicLong();
    private final Set<ShmFile> open = ConcurrentHashMap.newKeySet();

    /** @throws ViperConfigException when {@code dir} is not a writable directory */
    SharedMemory(Path dir) {
        if (!Files.isDirectory(dir) || !Files.isWritable(dir)) {
            throw new ViperConfigException("shared-memory directory " + dir + " is not a writable directory");
        }
        this.dir = dir;
    }

    Path dir() {
        return dir;
    }

    /**
     * A new file of {@code bytes} (sparse: pages are taken as they are written), mapped read-write.
     *
     * @param kind a lower-case word in the file name saying what the file holds
     * @throws RetriableViperException (UNAVAILABLE) when the file system has less room than {@code bytes}
     */
    ShmFile create(String kind, long bytes) {
        long usable = usableSpace();
        if (bytes > usable) {
            throw ViperException.of(
                    ViperException.Reason.UNAVAILABLE,
                    "no room in " + dir + " for " + bytes + " bytes of shared memory (" + usable
                            + " free); free some or give the agent another --shm-dir");
        }
        Path path = dir.resolve("viper-agent-" + pid + "-" + sequence.incrementAndGet() + "-" + kind);
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(
                path,
                Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
            if (bytes > 0) {
                ch.write(ByteBuffer.allocate(1), bytes - 1); // sets the size; the pages stay unallocated
            }
            MemorySegment segment = ch.map(FileChannel.MapMode.READ_WRITE, 0, Math.max(bytes, 0), arena);
            Object inode = Files.getAttribute(path, "unix:ino", LinkOption.NOFOLLOW_LINKS);
            ShmFile[] self = new ShmFile[1];
            self[0] = new ShmFile(path, inode, arena, segment, () -> open.remove(self[0]));
            open.add(self[0]);
            return self[0];
        } catch (IOException e) {
            arena.close();
            try {
                Files.deleteIfExists(path);
            } catch (IOException ignored) {
                // it may never have been created
            }
            throw new ViperException(
                    ViperException.Reason.IO, "cannot create shared-memory file " + path + ": " + e.getMessage(), e);
        }
    }

    /** Removes the files of agents whose process is gone; returns how many. */
    int removeStale() {
        int removed = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "viper-agent-*")) {
            for (Path f : files) {
                Matcher m = NAME.matcher(f.getFileName().toString());
                if (m.matches()
                        && ProcessHandle.of(Long.parseLong(m.group(1))).isEmpty()
                        && Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) {
                    try {
                        Files.delete(f);
                        removed++;
                    } catch (IOException e) {
                        // another user's file, or gone meanwhile: not ours to clean
                    }
                }
            }
        } catch (IOException | NumberFormatException e) {
            LOG.log(System.Logger.Level.DEBUG, "cannot list " + dir + ": " + e.getMessage());
        }
        return removed;
    }

    private long usableSpace() {
        try {
            return Files.getFileStore(dir).getUsableSpace();
        } catch (IOException e) {
            return Long.MAX_VALUE; // unknown: let the allocation itself fail if it must
        }
    }

    /** Unmaps and removes every file still open (at the agent's end, after its clients and consumers). */
    @Override
    public void close() {
        List.copyOf(open).forEach(ShmFile::close);
    }
}
