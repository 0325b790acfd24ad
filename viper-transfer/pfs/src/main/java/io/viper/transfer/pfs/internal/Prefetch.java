package io.viper.transfer.pfs.internal;

import static io.viper.transfer.pfs.internal.Residency.PAGE;

import io.viper.errors.RetriableViperException;
import io.viper.spi.TransportClient;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Path;

/**
 * Brings a cold file's mapping into memory in {@link #STREAMS} sequential streams, each over its own contiguous part in
 * pieces of {@link DirectIo#IO_CHUNK}, while a consumer verifies each piece as it lands: a verifier touching the
 * mapping itself faults its pages in about one readahead window at a time, far below what the disk gives. Each piece is
 * {@code madvise(MADV_POPULATE_READ)} (Linux 5.14 and later, through FFM: the pages land in the page cache and the
 * mapping's page tables), or, where that is refused, a positional read of the file into a scratch buffer (the pages
 * land in the page cache). Static; each call is independent.
 */
final class Prefetch {
    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    private static final int MADV_WILLNEED = 3;
    private static final int MADV_POPULATE_READ = 22;
    /**
     * Sequential streams per cold file: the kernel's readahead grows on each, where pieces in flight anywhere defeat
     * it. {@code viper bench pfs --size 1g --block-bytes 0}, four alternating runs each: one cold load 0.46-1.32 s
     * (median 0.62 s over all runs) with 4 streams against 0.69-0.82 s with 8 pieces of 4 MiB in flight in file order;
     * 4 consumers at once 0.45-0.57 s against 0.60-0.74 s.
     */
    static final int STREAMS = 4;
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
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup()
                    .find("madvise")
                    .map(f -> linker.downcallHandle(
                            f,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT)))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) {
            LOG.log(Level.DEBUG, "madvise is not available; cold PFS files are prefetched with reads", e);
            return null;
        }
    }

    /**
     * Reads {@code mapping}, all of the file open as {@code ch} mapped from its start, into memory in {@link #STREAMS}
     * sequential streams, each over its own contiguous part, telling {@code landed} of each piece of
     * {@link DirectIo#IO_CHUNK} once it is in, in file offsets, from the I/O threads.
     */
    static void populate(MemorySegment mapping, FileChannel ch, Path file, TransportClient.Arrivals landed)
            throws IOException {
        long size = mapping.byteSize();
        willNeed(mapping);
        int streams = (int) Math.max(1, Math.min(STREAMS, size / (4L * DirectIo.IO_CHUNK)));
        long part = (size / streams + DirectIo.IO_CHUNK - 1) / DirectIo.IO_CHUNK * DirectIo.IO_CHUNK;
        try (Arena arena = Arena.ofShared();
                InFlight inFlight = new InFlight(streams)) {
            for (long lo = 0; lo < size; lo += part) {
                long from = lo;
                long to = Math.min(size, lo + part);
                inFlight.submit(() -> {
                    MemorySegment scratch = null;
                    for (long at = from; at < to; at += DirectIo.IO_CHUNK) {
                        long length = Math.min(DirectIo.IO_CHUNK, to - at);
                        MemorySegment piece = mapping.asSlice(at, length);
                        if (advise(piece)) {
                            touch(piece, file.toString());
                        } else {
                            if (scratch == null) {
                                synchronized (arena) {
                                    scratch = arena.allocate(DirectIo.IO_CHUNK);
                                }
                            }
                            ParallelReader.readFully(ch, file, scratch.asSlice(0, length), at);
                        }
                        landed.arrived(at, length);
                    }
                });
            }
            inFlight.await();
        }
    }

    /**
     * Starts the kernel's read of all of {@code mapping} ({@code MADV_WILLNEED}, asynchronous), so that the device
     * works ahead of the streams' pieces (measured with 8 pieces in flight in file order, a cold 1 GiB file, six runs
     * each: 0.55-0.97 s with it, 0.78-1.10 s without). Best effort.
     */
    private static void willNeed(MemorySegment mapping) {
        if (MADVISE == null) {
            return;
        }
        try {
            int _ = (int) MADVISE.invokeExact(mapping, mapping.byteSize(), MADV_WILLNEED);
        } catch (Throwable e) { // invokeExact declares Throwable; the pieces are read without it
            LOG.log(Level.DEBUG, "madvise(MADV_WILLNEED) failed", e);
        }
    }

    /**
     * Reads a byte of each page of {@code piece}, just populated (or, where that was refused, faults them in). In this
     * virtual machine the first read of a page the host just filled is slow, though the guest takes no page fault (by
     * all signs a fault in the hypervisor); the threads that populate pay it in parallel, where otherwise the
     * verifier's one hashing thread took them all, after the transfer (a cold 1 GiB file, three alternating runs each:
     * verification ended 0-1 ms after the transfer with it, 295-375 ms without). Pages already mapped cost a read each.
     * Any thread.
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

    /** Whether {@code piece} of a file's mapping is now in memory ({@code MADV_POPULATE_READ}); false if refused. */
    static boolean advise(MemorySegment piece) {
        if (MADVISE == null) {
            return false;
        }
        try {
            return (int) MADVISE.invokeExact(piece, piece.byteSize(), MADV_POPULATE_READ) == 0;
        } catch (Throwable e) { // invokeExact declares Throwable; the read stands in
            return false;
        }
    }
}
