package io.viper.transfer.pfs.internal;

import static io.viper.transfer.pfs.internal.Residency.PAGE;

import io.viper.errors.RetriableViperException;
import io.viper.spi.TransportClient;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * Brings a cold file's mapping into memory in {@link #STREAMS} sequential streams, each over its own contiguous part in
 * pieces of {@link DirectIo#IO_CHUNK}, while a consumer verifies each piece as it lands: a verifier touching the
 * mapping itself faults its pages in about one readahead window at a time, far below what the disk gives. Each stream
 * reads its pieces with positional reads ({@code pread}), on an open file of its own advised as sequential, into a
 * scratch buffer of its own (the pages land in the page cache, and the kernel's readahead, growing on each stream read
 * in order, keeps the disk busy ahead of it), then reads a byte of each page of the piece through the mapping
 * ({@link #touch}), so that the mapping's page tables hold them before the piece is reported. The advice doubles each
 * stream's readahead window (8 to 16 MiB here): a cold 1 GiB file, {@code viper bench pfs --size 1g --block-bytes 0
 * --consumers 0}, 14 alternating rounds each, the cold load 0.50-0.70 s (median 0.55) with it against 0.47-1.15 s
 * (median 0.62) without; the same 16 streams in C into one reused buffer each, seven alternating rounds, 0.51-0.56 s
 * against 0.64-0.82 s. Static; each call is independent.
 */
final class Prefetch {
    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    private static final int MADV_POPULATE_READ = 22;
    private static final int MADV_WILLNEED = 3;
    /**
     * Sequential streams per cold file. A cold 1 GiB file (written by {@code viper publish}) brought into memory, eight
     * alternating rounds each, 3 s after the page cache was dropped ({@code viper bench pfs} waits so too): 8 streams
     * of positional reads 0.32-0.37 s, 16 streams 0.34-0.44 s; 4 streams of {@code MADV_POPULATE_READ} after a
     * {@code MADV_WILLNEED} of the whole mapping (the way before) 0.63-0.82 s, and 8 streams of reads after that
     * {@code MADV_WILLNEED} 0.62-0.70 s. Later, with the disk reading at 2-3 GB/s (the host's cache), a stream was
     * bound by the pages it brings in, not by the disk: {@code viper bench pfs --size 1g --block-bytes 0}, the cold
     * load, 8 streams 0.55-0.96 s (median 0.86, six runs), 16 to 64 streams 0.41-0.70 s (median 0.48, twelve runs; 16
     * alone 0.47-0.70); at 2 GiB, three alternating pairs, 8 streams 1.34-1.44 s and 16 1.14-1.60 s. Each stream holds
     * a scratch buffer of {@link DirectIo#IO_CHUNK} while it runs.
     */
    static final int STREAMS = 16;
    /** The last byte {@link #touch} read. */
    @SuppressWarnings("unused")
    private static volatile byte touched;

    /** {@code int madvise(void *addr, size_t length, int advice)}; null where the C library lacks it. */
    private static final MethodHandle MADVISE = lookup();

    private Prefetch() {}

    private static MethodHandle lookup() {
        if (!"Linux".equals(System.getProperty("os.name"))) {
            return null;
        }
        try {
            return FileDescriptors.optional(
                    "madvise",
                    FunctionDescriptor.of(
                            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
        } catch (RuntimeException | LinkageError e) {
            LOG.log(Level.DEBUG, "madvise is not available; mapped PFS blocks are faulted in by reads", e);
            return null;
        }
    }

    /**
     * Reads {@code mapping}, all of {@code file} mapped from its start, into memory in {@link #STREAMS} sequential
     * streams, each over its own contiguous part, telling {@code landed} of each piece of {@link DirectIo#IO_CHUNK}
     * once it is in, in file offsets, from the I/O threads.
     */
    static void populate(MemorySegment mapping, Path file, TransportClient.Arrivals landed) throws IOException {
        long size = mapping.byteSize();
        int streams = (int) Math.max(1, Math.min(STREAMS, size / (4L * DirectIo.IO_CHUNK)));
        long part = ((size + streams - 1) / streams + DirectIo.IO_CHUNK - 1) / DirectIo.IO_CHUNK * DirectIo.IO_CHUNK;
        try (InFlight inFlight = new InFlight(streams)) {
            for (long lo = 0; lo < size; lo += part) {
                long from = lo;
                long to = Math.min(size, lo + part);
                inFlight.submit(() -> stream(mapping, file, from, to, landed));
            }
            inFlight.await();
        }
    }

    /**
     * One stream: {@code [from, to)} of {@code file} read in order on an open file of its own (the kernel's readahead
     * state is per open file: streams sharing one slowed each other, 0.61-0.78 s against 0.41-0.62 s in the rounds
     * above), advised as sequential ({@code POSIX_FADV_SEQUENTIAL}: the kernel reads twice its window ahead), each
     * piece then touched in {@code mapping} and reported. Where the file cannot be opened again as the same size of
     * regular file ({@link #reopen}), the stream has the kernel populate the mapping instead
     * ({@code MADV_POPULATE_READ}); what is verified is always the mapping.
     */
    private static void stream(MemorySegment mapping, Path file, long from, long to, TransportClient.Arrivals landed)
            throws IOException {
        int fd = reopen(file, mapping.byteSize());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment scratch = fd < 0 ? null : arena.allocate(Math.min(DirectIo.IO_CHUNK, to - from));
            if (fd >= 0) {
                int _ = FileDescriptors.advise(fd, from, to - from, FileDescriptors.POSIX_FADV_SEQUENTIAL);
            }
            for (long at = from; at < to; at += DirectIo.IO_CHUNK) {
                long length = Math.min(DirectIo.IO_CHUNK, to - at);
                MemorySegment piece = mapping.asSlice(at, length);
                if (fd >= 0) {
                    ParallelReader.readFully(fd, file, scratch.asSlice(0, length), at);
                } else {
                    boolean _ = advise(piece); // refused: the touch faults the pages in
                }
                touch(piece, file.toString());
                landed.arrived(at, length);
            }
        } finally {
            if (fd >= 0) {
                FileDescriptors.close(fd);
            }
        }
    }

    /**
     * {@code file} open again for reading ahead of its mapping, {@code size} bytes long: its descriptor, or -1 when its
     * name is gone (retention deleted the version meanwhile), or names something else now. The name is opened without
     * blocking ({@link FileDescriptors#READ}: a FIFO planted in its place would otherwise wait for a writer forever)
     * and must hold as many bytes as the mapping (a FIFO or a device has no such size). Should the name now hold
     * another file of that size, the reads bring in that file's pages in vain, and the touch faults in the mapping's
     * own. -1 where open(2) is not reachable through FFM (not Linux).
     */
    private static int reopen(Path file, long size) {
        int fd = FileDescriptors.open(file, FileDescriptors.READ);
        if (fd < 0) {
            LOG.log(Level.DEBUG, file + ": cannot reopen to read ahead of the mapping; populating it instead");
            return -1;
        }
        if (FileDescriptors.size(fd) != size) {
            LOG.log(Level.DEBUG, file + ": no longer the mapped file; populating the mapping instead");
            FileDescriptors.close(fd);
            return -1;
        }
        return fd;
    }

    /**
     * Reads a byte of each page of {@code piece}, just read into the page cache or populated (or, where neither was
     * done, faults them in), so that the mapping's page tables hold them. In this virtual machine the first read of a
     * page the host just filled is slow, though the guest takes no page fault: the guest reports the memory it frees to
     * its host (virtio-balloon free page reporting), and the host backs it again when it is filled; the threads that
     * bring the file in pay it in parallel, where otherwise the verifier's one hashing thread took them all, after the
     * transfer (a cold 1 GiB file, three alternating runs each: verification ended 0-1 ms after the transfer with it,
     * 295-375 ms without). Pages already mapped cost a read each. Any thread.
     *
     * @param what the file or version, for the exception
     * @throws RetriableViperException when a page is past the end of its file (truncated underneath)
     */
    static void touch(MemorySegment piece, String what) {
        byte seen = 0;
        try {
            for (long at = 0; at < piece.byteSize(); at += PAGE) {
                seen |= piece.get(ValueLayout.JAVA_BYTE, at);
            }
        } catch (InternalError fault) { // a page past the end of a file truncated underneath
            throw FileTransportClient.truncatedUnderneath(what, fault);
        }
        touched = seen; // read, so that the compiler keeps the loop
    }

    /**
     * Has the kernel start reading {@code piece} of a file's mapping into the page cache and returns at once
     * ({@code MADV_WILLNEED}: readahead, not waited for), so that the disk works ahead of the threads that populate.
     * Advice: where it is refused, or {@code madvise} is missing, the populate reads the pages itself.
     */
    static void readAhead(MemorySegment piece) {
        boolean _ = madvise(piece, MADV_WILLNEED);
    }

    /** Whether {@code piece} of a file's mapping is now in memory ({@code MADV_POPULATE_READ}); false if refused. */
    static boolean advise(MemorySegment piece) {
        return madvise(piece, MADV_POPULATE_READ);
    }

    /** {@code madvise(piece, advice)}: whether the kernel took it; false where refused or missing (advice only). */
    private static boolean madvise(MemorySegment piece, int advice) {
        if (MADVISE == null) {
            return false;
        }
        try {
            return (int) MADVISE.invokeExact(piece, piece.byteSize(), advice) == 0;
        } catch (Throwable e) { // invokeExact declares Throwable; the caller's reads stand in
            LOG.log(Level.DEBUG, "madvise(" + advice + ") failed", e);
            return false;
        }
    }
}
