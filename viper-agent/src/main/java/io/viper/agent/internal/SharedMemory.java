package io.viper.agent.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where the agent keeps its shared-memory files: a directory of its own in {@code --shm-dir} ({@code /dev/shm} by
 * default), {@code viper-agent-<32 random hex digits>}, made by this agent (mode 0700, so that only its user can create
 * or replace a file in it), holding {@code agent.lock}, locked for as long as the agent runs, and the files, owner-only
 * (0600), each named {@code <32 random hex digits>-<kind>}. Nothing in a name is predictable (no pid, no counter), and
 * another user could not create a file in the directory anyway. At start the agent removes the directories of its own
 * user whose lock no process holds (agents that died), and the files of the older layout
 * ({@code viper-agent-<pid>-<n>-<kind>} in {@code --shm-dir} itself) that its user owns and whose pid is gone: never
 * another user's. {@link #close()} removes the files still open and the directory. Thread-safe.
 */
final class SharedMemory implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(SharedMemory.class.getName());
    private static final String PREFIX = "viper-agent-";
    private static final Pattern AGENT_DIR = Pattern.compile("viper-agent-[0-9a-f]{32}");
    private static final Pattern OLD_LAYOUT = Pattern.compile("viper-agent-(\\d+)-\\d+-[a-z]+");
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rwx------");
    private static final SecureRandom RANDOM = new SecureRandom();
    /**
     * The directories of the agents in this JVM: never opened by a sweep, since closing any channel on a lock file
     * releases every lock this process holds on it.
     */
    private static final Set<Path> HELD = ConcurrentHashMap.newKeySet();
    /** The file in an agent's directory that the agent keeps locked while it runs. */
    static final String LOCK_FILE = "agent.lock";

    private final Path parent;
    private final Path dir;
    private final UserPrincipal owner;
    private final FileChannel lock;
    private final Supplier<String> names;
    private final Set<ShmFile> open = ConcurrentHashMap.newKeySet();

    /**
     * @throws ViperConfigException when {@code shmDir} is not a writable directory or no directory can be made in it
     */
    SharedMemory(Path shmDir) {
        this(shmDir, SharedMemory::randomName);
    }

    /** As above, naming the files {@code names.get() + "-" + kind} (tests force a name that is taken). */
    SharedMemory(Path shmDir, Supplier<String> names) {
        if (!Files.isDirectory(shmDir) || !Files.isWritable(shmDir)) {
            throw new ViperConfigException("shared-memory directory " + shmDir + " is not a writable directory");
        }
        this.parent = shmDir;
        this.names = names;
        // Made under a name no sweep looks at, locked, then renamed: no other agent takes it for a dead one's.
        Path fresh = shmDir.resolve("." + PREFIX + randomName() + ".new");
        FileChannel locked = null;
        try {
            Files.createDirectory(fresh, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
            Files.setPosixFilePermissions(fresh, OWNER_ONLY); // whatever the umask
            if (!Files.getPosixFilePermissions(fresh, LinkOption.NOFOLLOW_LINKS).equals(OWNER_ONLY)) {
                throw new IOException(fresh + " does not keep mode 0700 (a file system without POSIX modes?)");
            }
            locked = FileChannel.open(
                    fresh.resolve(LOCK_FILE),
                    Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            locked.lock();
            this.owner = Files.getOwner(fresh, LinkOption.NOFOLLOW_LINKS);
            this.dir = shmDir.resolve(PREFIX + randomName());
            HELD.add(dir);
            Files.move(fresh, dir, StandardCopyOption.ATOMIC_MOVE);
            this.lock = locked;
        } catch (IOException e) {
            closeQuietly(locked);
            deleteTreeQuietly(fresh);
            throw new ViperConfigException(
                    "cannot make the agent's shared-memory directory in " + shmDir + ": " + e.getMessage(), e);
        }
    }

    /** The agent's own directory, where its files are (the {@code shm_dir} of its hello replies). */
    Path dir() {
        return dir;
    }

    /** Bytes of the files open now (their mapped sizes; pages of a sparse file not yet written take no memory). */
    long openBytes() {
        long sum = 0;
        for (ShmFile f : open) {
            sum += f.byteSize();
        }
        return sum;
    }

    /** How many files of {@code kind} ({@link #create}) are open now. */
    long openFiles(String kind) {
        String suffix = "-" + kind;
        return open.stream()
                .filter(f -> f.path().getFileName().toString().endsWith(suffix))
                .count();
    }

    /** 128 random bits, in hex. */
    static String randomName() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
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
        Path path = dir.resolve(names.get() + "-" + kind);
        Arena arena = Arena.ofShared();
        boolean created = false;
        try (FileChannel ch = FileChannel.open(
                path,
                Set.of(
                        StandardOpenOption.CREATE_NEW,
                        StandardOpenOption.READ,
                        StandardOpenOption.WRITE,
                        LinkOption.NOFOLLOW_LINKS),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))) {
            created = true;
            if (bytes > 0) {
                ch.write(ByteBuffer.allocate(1), bytes - 1); // sets the size; the pages stay unallocated
            }
            MemorySegment segment = ch.map(FileChannel.MapMode.READ_WRITE, 0, Math.max(bytes, 0), arena);
            Object inode = Files.getAttribute(path, "unix:ino", LinkOption.NOFOLLOW_LINKS);
            ShmFile[] self = new ShmFile[1];
            self[0] = new ShmFile(path, inode, arena, segment, () -> open.remove(self[0]));
            open.add(self[0]);
            return self[0];
        } catch (FileAlreadyExistsException e) {
            arena.close();
            // not ours to delete: the directory is the agent's own, so something else wrote into it
            throw new ViperException(
                    ViperException.Reason.IO,
                    "cannot create shared-memory file " + path + ": a file of that name exists already, which this"
                            + " agent did not make (check who writes into " + dir + ")",
                    e);
        } catch (IOException e) {
            arena.close();
            if (created) {
                deleteQuietly(path);
            }
            throw new ViperException(
                    ViperException.Reason.IO, "cannot create shared-memory file " + path + ": " + e.getMessage(), e);
        }
    }

    /**
     * Removes what agents of this user that are no longer running left: their directories (no process holds their lock)
     * and files of the older layout whose pid is gone. Another user's entries are left alone, whoever runs the agent
     * (root included). Returns how many directories and files went.
     */
    int removeStale() {
        int removed = 0;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(parent, PREFIX + "*")) {
            for (Path e : entries) {
                removed += removeIfStale(e) ? 1 : 0;
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "cannot list " + parent + ": " + e.getMessage());
        }
        return removed;
    }

    private boolean removeIfStale(Path entry) {
        try {
            if (HELD.contains(entry) || !owner.equals(Files.getOwner(entry, LinkOption.NOFOLLOW_LINKS))) {
                return false;
            }
            String name = entry.getFileName().toString();
            Matcher old = OLD_LAYOUT.matcher(name);
            if (AGENT_DIR.matcher(name).matches() && Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS)) {
                if (!unlocked(entry)) {
                    return false;
                }
                deleteTreeQuietly(entry);
                return true;
            }
            return old.matches()
                    && ProcessHandle.of(Long.parseLong(old.group(1))).isEmpty()
                    && Files.isRegularFile(entry, LinkOption.NOFOLLOW_LINKS)
                    && deleteQuietly(entry);
        } catch (IOException | NumberFormatException e) {
            return false; // gone meanwhile, or a pid out of range: not ours to clean
        }
    }

    /** Whether no process holds the lock of the agent directory {@code agentDir} (its agent died). */
    private static boolean unlocked(Path agentDir) {
        try (FileChannel ch =
                FileChannel.open(agentDir.resolve(LOCK_FILE), StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS)) {
            FileLock l = ch.tryLock();
            return l != null; // released when the channel closes
        } catch (OverlappingFileLockException e) {
            return false; // an agent in this JVM holds it
        } catch (IOException e) {
            return false; // no lock file: not an agent's directory as this one makes them
        }
    }

    private static boolean deleteQuietly(Path file) {
        try {
            return Files.deleteIfExists(file);
        } catch (IOException e) {
            return false;
        }
    }

    /** Deletes {@code top} and the plain files in it (an agent's directory holds nothing else). */
    private static void deleteTreeQuietly(Path top) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(top)) {
            for (Path f : files) {
                deleteQuietly(f);
            }
        } catch (IOException e) {
            // gone or unreadable: the delete below says whether it mattered
        }
        deleteQuietly(top);
    }

    private static void closeQuietly(FileChannel ch) {
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException e) {
                // nothing held by a channel that failed to close
            }
        }
    }

    private long usableSpace() {
        try {
            return Files.getFileStore(dir).getUsableSpace();
        } catch (IOException e) {
            return Long.MAX_VALUE; // unknown: let the allocation itself fail if it must
        }
    }

    /**
     * Unmaps and removes every file still open (at the agent's end, after its clients and consumers), then the agent's
     * directory, unlocked last.
     */
    @Override
    public void close() {
        List.copyOf(open).forEach(ShmFile::close);
        deleteTreeQuietly(dir);
        closeQuietly(lock);
        HELD.remove(dir);
    }
}
