package io.viper.transfer.pfs.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How the PFS repository opens files for its large writes: with {@code O_DIRECT} ({@link ExtendedOpenOption#DIRECT})
 * where the file system takes it, so that a flush goes from the writer's aligned buffers to the device without filling
 * the page cache with bytes nobody reads back, and buffered where it does not (tmpfs, some FUSE and network file
 * systems), with the same results. Also the daemon threads the parallel reads and writes run on. Static and
 * thread-safe.
 */
final class DirectIo {
    /** Bytes per parallel read or write: large enough for the device, small enough to keep several in flight. */
    static final int IO_CHUNK = 4 << 20;
    /** The largest block size direct writes align to; a file system with larger blocks is written buffered. */
    static final int MAX_ALIGNMENT = 64 << 10;
    /** Writes a flush of a safetensors file keeps in flight. */
    static final int WRITES_IN_FLIGHT = 4;
    /**
     * Block files a flush writes at once: each is small (1 MiB by default) and a new file, so more of them overlap than
     * pieces of one large file; the batch is synced together before the renames ({@link BlockBatch#commit}).
     */
    static final int BLOCKS_IN_FLIGHT = 16;
    /** Reads a load keeps in flight (buffered: the device sees them as one deep queue). */
    static final int READS_IN_FLIGHT = 8;
    /**
     * How far ahead of the blocks it reads a load of a version kept as blocks has the kernel read
     * ({@link MappedBlocks#populate}, {@link BlockReader#read}): each block file is read on its own, so without it at
     * most {@link #READS_IN_FLIGHT} blocks are read at once, and a file's readahead never runs past its end into the
     * next block. Bounded, so that a large version's pages are not read long before they are used and evicted
     * meanwhile. 1 GiB of cold 1 MiB blocks with free page reporting off (so that the disk decides): mapped in place
     * and populated, six loads each, none the first of its process, 431-608 ms with none, 389-520 ms with 32 MiB ahead,
     * 380-516 ms with 128 MiB; read into a receive buffer, nine loads each in three alternating rounds, 747-1118 ms
     * with none (median 811), 709-959 ms with 64 MiB (median 752). With reporting on, the memory the host backs again
     * decides instead, as for a file (docs/benchmarks.md).
     */
    static final long READ_AHEAD_BYTES = 64L << 20;

    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    private static final AtomicInteger THREADS = new AtomicInteger();
    /** Threads of every flush and load of this process; each operation bounds its own tasks in flight. */
    private static final ExecutorService POOL = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "viper-pfs-io-" + THREADS.incrementAndGet());
        t.setDaemon(true);
        return t;
    });

    /**
     * {@code ExtendedOpenOption.DIRECT} (module jdk.unsupported), looked up by name: javac warns of every reference to
     * it, and the build fails on warnings. Null where the runtime lacks it (then every write is buffered). Tests set it
     * to null, or to an option every file system refuses, to exercise the buffered path and the fallback.
     */
    static volatile OpenOption direct = directOption();

    private DirectIo() {}

    /** The threads parallel reads and writes run on. */
    static ExecutorService pool() {
        return POOL;
    }

    /**
     * A new file open for writing, and the alignment its writes need: the file system's block size when the channel is
     * direct, 1 when it is buffered.
     */
    record Target(FileChannel channel, int alignment) implements AutoCloseable {
        boolean direct() {
            return alignment > 1;
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /**
     * Creates {@code file} (it must not exist: {@code CREATE_NEW}, which follows no link) and opens it for writing,
     * directly where the file system allows.
     */
    static Target createNew(Path file) throws IOException {
        FileChannel buffered = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        FileChannel directChannel = null;
        int alignment = direct == null ? 1 : blockSize(file);
        if (alignment > 1) {
            directChannel = openDirect(file, StandardOpenOption.WRITE);
        }
        if (directChannel == null) {
            return new Target(buffered, 1);
        }
        buffered.close();
        return new Target(directChannel, alignment);
    }

    /** The file system's block size where it is a power of two up to {@link #MAX_ALIGNMENT}, else 1 (no direct). */
    private static int blockSize(Path file) {
        try {
            long size = Files.getFileStore(file).getBlockSize();
            return size > 1 && Long.bitCount(size) == 1 && size <= MAX_ALIGNMENT ? (int) size : 1;
        } catch (IOException | UnsupportedOperationException e) {
            return 1;
        }
    }

    private static OpenOption directOption() {
        try {
            return (OpenOption) Class.forName("com.sun.nio.file.ExtendedOpenOption")
                    .getField("DIRECT")
                    .get(null);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            LOG.log(Level.DEBUG, "no ExtendedOpenOption.DIRECT in this runtime: PFS writes are buffered", e);
            return null;
        }
    }

    private static FileChannel openDirect(Path file, OpenOption mode) {
        OpenOption option = direct;
        if (option == null) {
            return null;
        }
        try {
            return FileChannel.open(file, mode, option, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException | UnsupportedOperationException e) {
            // tmpfs and others refuse O_DIRECT (EINVAL): the buffered channel does the same work
            LOG.log(Level.DEBUG, "{0}: no direct I/O here ({1}); writing through the page cache", file, e.toString());
            return null;
        }
    }

    /** Rounds {@code n} up to a multiple of {@code alignment} (a power of two). */
    static long alignUp(long n, int alignment) {
        return (n + alignment - 1) & -(long) alignment;
    }
}
