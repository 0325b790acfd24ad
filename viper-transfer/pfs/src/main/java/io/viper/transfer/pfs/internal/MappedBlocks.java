package io.viper.transfer.pfs.internal;

import static io.viper.transfer.pfs.internal.Residency.PAGE;

import io.viper.errors.IoProblems;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperCorruptDataException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A version the PFS repository keeps as blocks, mapped in place as one contiguous, read-only data section: every page
 * that lies wholly inside a block starting on a page boundary is that block file's own page ({@code mmap} with
 * {@code MAP_FIXED} into a reserved range of this process's address space), and the rest (a block's last partial page,
 * a block that starts mid-page) is anonymous memory filled with reads of the block files when it is mapped. The mapped
 * pages are the page cache's: nothing is copied, no receive buffer is allocated and first touched, and consumers of one
 * version on a node hold one copy of it (docs/architecture.md#pfs-io).
 *
 * <p>Mapped only when at least {@link #MIN_IN_PLACE} of the data section can be mapped in place (a layout of tensors at
 * page-aligned offsets, as a model of one or a few large tensors has); else {@link #map} is empty and the consumer
 * reads the version into a receive buffer. Linux only (elsewhere empty). Block files are written once under their
 * content's name and renamed into place, never rewritten: a mapping stays valid after retention deletes one (POSIX
 * unlink semantics). A block file shorter than its block is refused before it is mapped (touching a page past a file's
 * end would be a fault).
 *
 * <p>{@link #populate} may be called once, by the thread that mapped; {@link #close} once by anyone, after which
 * {@link #data} and every slice of it fail instead of reading unmapped memory.
 */
final class MappedBlocks implements TransportClient.MappedData {
    /** The share of the data section that must map in place for a version to be mapped. */
    static final double MIN_IN_PLACE = 0.5;

    /**
     * The most blocks one version maps: each is a mapping of its own, and a process has {@code vm.max_map_count} of
     * them (65530 by default) for everything, two versions at once included; a quarter of it (16 GiB of 1 MiB blocks by
     * default). A larger version is read into a receive buffer.
     */
    static final int MAX_BLOCKS = maxMapCount() / 4;

    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    // mmap(2) flags, the same on Linux's x86-64 and aarch64
    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int MAP_SHARED = 1;
    private static final int MAP_PRIVATE = 2;
    private static final int MAP_FIXED = 0x10;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final int MAP_NORESERVE = 0x4000;

    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;

    static {
        MethodHandle mmap = null;
        MethodHandle munmap = null;
        if (FileDescriptors.available()) {
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                mmap = linker.downcallHandle(
                        libc.findOrThrow("mmap"),
                        FunctionDescriptor.of(
                                ValueLayout.ADDRESS,
                                ValueLayout.ADDRESS,
                                ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_LONG));
                munmap = linker.downcallHandle(
                        libc.findOrThrow("munmap"),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
            } catch (RuntimeException | LinkageError e) {
                LOG.log(Level.DEBUG, "mmap is not available; versions kept as blocks are read, not mapped", e);
                mmap = null;
            }
        }
        MMAP = mmap;
        MUNMAP = munmap;
    }

    private final BlockReader blocks;
    private final long address;
    private final long regionBytes;
    private final Arena arena;
    private final MemorySegment data;
    /** The blocks whose whole pages are mapped in place ({@link #pagesOf}), in data order. */
    private final List<Integer> inPlace = new ArrayList<>();
    /** The bytes read into anonymous memory when mapped, as data-section ranges. */
    private final List<ByteRange> read = new ArrayList<>();

    private final AtomicBoolean released = new AtomicBoolean();

    private MappedBlocks(BlockReader blocks, long address, long regionBytes, long dataBytes) {
        this.blocks = blocks;
        this.address = address;
        this.regionBytes = regionBytes;
        this.arena = Arena.ofShared();
        this.data = MemorySegment.ofAddress(address).reinterpret(dataBytes, arena, null);
    }

    /**
     * Maps the version {@code blocks} reads ({@code dataBytes} long), or empty where it cannot be mapped in place (not
     * Linux, or less than {@link #MIN_IN_PLACE} of it on page boundaries).
     *
     * @throws ViperNotFoundException when a block file is missing
     * @throws ViperCorruptDataException when a block file is shorter than its block
     */
    static Optional<TransportClient.MappedData> map(BlockReader blocks, long dataBytes) {
        return map(blocks, dataBytes, MAX_BLOCKS);
    }

    /** As {@link #map(BlockReader, long)}, mapping no version of more than {@code maxBlocks} blocks. */
    static Optional<TransportClient.MappedData> map(BlockReader blocks, long dataBytes, int maxBlocks) {
        if (MMAP == null
                || dataBytes == 0
                || blocks.blocks() > maxBlocks
                || inPlaceBytes(blocks) < MIN_IN_PLACE * dataBytes) {
            return Optional.empty();
        }
        long regionBytes = (dataBytes + PAGE - 1) / PAGE * PAGE;
        long address;
        try {
            address = mmap(
                    0, regionBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, blocks);
        } catch (MapRefused e) {
            LOG.log(Level.DEBUG, e.getMessage() + "; it is read instead");
            return Optional.empty();
        }
        MappedBlocks mapped = new MappedBlocks(blocks, address, regionBytes, dataBytes);
        try {
            mapped.mapInPlace();
            mapped.readTheRest();
            return Optional.of(mapped);
        } catch (MapRefused e) {
            // out of mappings or address space: the version is read into a receive buffer instead
            LOG.log(Level.WARNING, e.getMessage() + "; it is read instead");
            mapped.close();
            return Optional.empty();
        } catch (RuntimeException | Error e) {
            mapped.close();
            throw e;
        }
    }

    /** {@code vm.max_map_count}, or Linux's default where it cannot be read. */
    private static int maxMapCount() {
        try {
            // by line: /proc reports a size of 0, and Files.readString then reads a single byte
            return Integer.parseInt(Files.readAllLines(Path.of("/proc/sys/vm/max_map_count"))
                    .getFirst()
                    .strip());
        } catch (IOException | RuntimeException e) {
            return 65530;
        }
    }

    /** The kernel refused a mapping ({@code mmap} failed): not the version's fault, nor a reason to retry. */
    private static final class MapRefused extends RuntimeException {
        private static final long serialVersionUID = 1L;

        MapRefused(String message) {
            super(message, null, false, false);
        }
    }

    /** The bytes of whole pages in blocks that start on a page boundary. */
    private static long inPlaceBytes(BlockReader blocks) {
        long bytes = 0;
        for (int b = 0; b < blocks.blocks(); b++) {
            bytes += wholePages(blocks, b);
        }
        return bytes;
    }

    /** The bytes of block {@code b} that map in place: its whole pages if it starts on a page boundary, else none. */
    private static long wholePages(BlockReader blocks, int b) {
        return blocks.start(b) % PAGE == 0 ? blocks.length(b) / PAGE * PAGE : 0;
    }

    /**
     * Maps every block's whole pages in place, in {@link DirectIo#READS_IN_FLIGHT} runs of blocks at once: each block
     * file is opened, checked and mapped, and where the kernel has not looked into the store since it was written (a
     * node that restarted), each open waits for the disk to read its directory and inode. A new process opening 1024
     * such files (1 MiB blocks of 1 GiB): 45-46 ms in 8 runs, against 67-68 ms one after another; in the page cache 32
     * ms against 37 ms.
     */
    private void mapInPlace() {
        for (int b = 0; b < blocks.blocks(); b++) {
            long start = blocks.start(b);
            long length = blocks.length(b);
            long whole = wholePages(blocks, b);
            if (whole > 0) {
                inPlace.add(b);
            }
            if (whole < length) {
                read.add(new ByteRange(start + whole, length - whole, start + whole));
            }
        }
        int runs = Math.max(1, Math.min(DirectIo.READS_IN_FLIGHT, inPlace.size()));
        int perRun = (inPlace.size() + runs - 1) / runs;
        try (InFlight inFlight = new InFlight(runs)) {
            for (int from = 0; from < inPlace.size(); from += perRun) {
                List<Integer> run = inPlace.subList(from, Math.min(inPlace.size(), from + perRun));
                inFlight.submit(() -> {
                    for (int b : run) {
                        mapBlock(b);
                    }
                });
            }
            inFlight.await();
        } catch (IOException e) { // the runs throw none of their own
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER,
                    "cannot map the blocks of " + blocks.describe() + ": " + IoProblems.describe(e),
                    e);
        }
    }

    /**
     * Maps the whole pages of block {@code b}'s file over the reserved pages at its place, once it is checked to hold
     * its block (its size from the open file, not a second lookup of its path).
     */
    private void mapBlock(int b) {
        Path file = blocks.file(b);
        int fd = FileDescriptors.open(file, FileDescriptors.READ);
        if (fd < 0) {
            if (!Files.exists(file)) {
                throw new ViperNotFoundException(
                        file + ": a block of " + blocks.describe() + " is missing from the block store");
            }
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER, file + ": cannot open a block of " + blocks.describe());
        }
        try {
            long size = FileDescriptors.size(fd);
            if (size < 0) {
                throw new ViperCorruptDataException(
                        file + ": block of " + blocks.describe() + " has no size (not a regular file)");
            }
            if (size < blocks.length(b)) {
                throw new ViperCorruptDataException(file + ": block of " + blocks.describe() + " holds " + size
                        + " bytes, not its " + blocks.length(b));
            }
            mmap(address + blocks.start(b), wholePages(blocks, b), PROT_READ, MAP_SHARED | MAP_FIXED, fd, blocks);
        } finally {
            FileDescriptors.close(fd); // the mapping keeps the file
        }
    }

    /** The pages not mapped in place: read from the block files into the anonymous memory under them. */
    private void readTheRest() {
        if (!read.isEmpty()) {
            blocks.read(read, data, TransportClient.Arrivals.NONE);
        }
    }

    private static long mmap(long at, long bytes, int prot, int flags, int fd, BlockReader blocks) {
        MemorySegment result;
        try {
            result = (MemorySegment) MMAP.invokeExact(MemorySegment.ofAddress(at), bytes, prot, flags, fd, 0L);
        } catch (Throwable e) { // invokeExact declares Throwable
            throw new IllegalStateException("mmap", e);
        }
        if (result.address() == -1L || (at != 0 && result.address() != at)) {
            throw new MapRefused("cannot map " + bytes + " bytes of " + blocks.describe()
                    + " in place (mmap failed: address space, memory or vm.max_map_count)");
        }
        return result.address();
    }

    @Override
    public MemorySegment data() {
        return data.asReadOnly();
    }

    /**
     * Reports the pages read when mapped at once, then brings the blocks mapped in place into memory
     * ({@code MADV_POPULATE_READ}, then a read of each page, {@link Prefetch#touch}, which faults them in where that is
     * refused), {@link DirectIo#READS_IN_FLIGHT} blocks at once in data order, the kernel reading
     * {@link DirectIo#READ_AHEAD_BYTES} ahead of them, reporting each as it is in. The reads of each page: 4 consumers
     * loading 1 GiB of cold blocks at once, four alternating runs each, the last done in 0.66-0.75 s with them against
     * 0.72-0.90 s without; one consumer alike (0.71-0.89 s, 0.73-0.79 s).
     */
    @Override
    public void populate(TransportClient.Arrivals arrivals) {
        TransportClient.Arrivals serial = ParallelReader.serialized(arrivals);
        for (ByteRange r : read) {
            serial.arrived(r.sourceOffset(), r.length());
        }
        try (InFlight inFlight = new InFlight(DirectIo.READS_IN_FLIGHT)) {
            int ahead = 0; // inPlace[0, ahead) are handed to the kernel's readahead
            for (int b : inPlace) {
                long until = blocks.start(b) + DirectIo.READ_AHEAD_BYTES;
                for (; ahead < inPlace.size() && blocks.start(inPlace.get(ahead)) < until; ahead++) {
                    Prefetch.readAhead(pagesOf(inPlace.get(ahead)));
                }
                MemorySegment pages = pagesOf(b);
                inFlight.submit(() -> {
                    // populated where the kernel takes MADV_POPULATE_READ, faulted in by the touch where not
                    boolean _ = Prefetch.advise(pages);
                    Prefetch.touch(pages, blocks.describe());
                    serial.arrived(blocks.start(b), pages.byteSize());
                });
            }
            inFlight.await();
        } catch (IOException e) {
            throw new RetriableViperException(
                    ViperException.Reason.TRANSFER,
                    "cannot read the blocks of " + blocks.describe() + ": " + IoProblems.describe(e),
                    e);
        }
    }

    /** Block {@code b}'s pages mapped in place, in the data section. */
    private MemorySegment pagesOf(int b) {
        return data.asSlice(blocks.start(b), wholePages(blocks, b));
    }

    /** Unmaps the whole range: the block files' pages and the anonymous ones. Idempotent. */
    @Override
    public void close() {
        if (!released.compareAndSet(false, true)) {
            return;
        }
        arena.close(); // every view of the data fails from here on, before the pages go
        try {
            int _ = (int) MUNMAP.invokeExact(MemorySegment.ofAddress(address), regionBytes);
        } catch (Throwable e) { // invokeExact declares Throwable; the range stays mapped until the process exits
            LOG.log(Level.WARNING, "munmap of " + blocks.describe() + " failed", e);
        }
    }

    @Override
    public String toString() {
        return "MappedData[" + blocks.describe() + " as blocks, " + data.byteSize() + " bytes]";
    }
}
