package io.viper.transfer.pfs.internal;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * How much of a mapped file is in the page cache, by {@code mincore(2)} through the FFM API: a hot file is served from
 * its mapping (no copy), a cold one is read with parallel ranged reads, which fill the device where faulting the
 * mapping's pages in one after another leaves it idle. Where {@code mincore} is missing or fails (another OS, pages
 * larger than 4 KiB) the share is unknown and the file counts as cold. Static and thread-safe.
 */
final class Residency {
    /** The share of a file's pages in the page cache from which it counts as hot. */
    static final double HOT = 0.9;

    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    /** The page size the PFS code maps, probes and touches files by (4 KiB, as on Linux x86-64 and aarch64). */
    static final long PAGE = 4096;
    /** {@code int mincore(void *addr, size_t length, unsigned char *vec)}; null where the C library lacks it. */
    private static final MethodHandle MINCORE = lookup();

    private Residency() {}

    private static MethodHandle lookup() {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.defaultLookup()
                    .find("mincore")
                    .map(f -> linker.downcallHandle(
                            f,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.ADDRESS)))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) {
            LOG.log(Level.DEBUG, "mincore is not available; PFS files are read as cold", e);
            return null;
        }
    }

    /**
     * The share (0 to 1) of the pages of {@code mapping}, a whole file mapped from its start (page-aligned), that are
     * in the page cache; 0 when it cannot tell.
     */
    static double resident(MemorySegment mapping) {
        long size = mapping.byteSize();
        if (MINCORE == null || size == 0 || mapping.address() % PAGE != 0) {
            return 0;
        }
        long pages = (size + PAGE - 1) / PAGE;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment vec = arena.allocate(pages);
            int rc = (int) MINCORE.invokeExact(mapping, size, vec);
            if (rc != 0) {
                return 0;
            }
            long in = 0;
            for (long i = 0; i < pages; i++) {
                in += vec.get(ValueLayout.JAVA_BYTE, i) & 1;
            }
            return in / (double) pages;
        } catch (Throwable e) { // invokeExact declares Throwable; nothing here may fail a read
            LOG.log(Level.DEBUG, "mincore failed; the file is read as cold", e);
            return 0;
        }
    }
}
