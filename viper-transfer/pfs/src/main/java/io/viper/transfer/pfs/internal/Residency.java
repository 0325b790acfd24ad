package io.viper.transfer.pfs.internal;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Whether a mapped file is in the page cache, by {@code mincore(2)} through the FFM API: a hot file is served from its
 * mapping (no copy), a cold one is read with parallel ranged reads, which fill the device where faulting the mapping's
 * pages in one after another leaves it idle. Where {@code mincore} is missing or fails (another OS, pages larger than 4
 * KiB) the file counts as cold. Static and thread-safe.
 */
final class Residency {
    /** The share of a file's pages in the page cache from which it counts as hot. */
    static final double HOT = 0.9;

    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    /** The page size the PFS code maps, probes and touches files by (4 KiB, as on Linux x86-64 and aarch64). */
    static final long PAGE = 4096;
    /** Pages probed by one {@code mincore} call (32 MiB of the file), a multiple of 8. */
    static final int PROBE_PAGES = 8192;
    /** The resident bit of each of the 8 bytes of {@code mincore}'s vector in a long. */
    private static final long RESIDENT_BITS = 0x0101010101010101L;
    /** {@code int mincore(void *addr, size_t length, unsigned char *vec)}; null where the C library lacks it. */
    private static final MethodHandle MINCORE = lookup();

    private Residency() {}

    private static MethodHandle lookup() {
        try {
            return FileDescriptors.optional(
                    "mincore",
                    FunctionDescriptor.of(
                            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));
        } catch (RuntimeException | LinkageError e) {
            LOG.log(Level.DEBUG, "mincore is not available; PFS files are read as cold", e);
            return null;
        }
    }

    /**
     * Whether at least {@link #HOT} of the pages of {@code mapping}, a whole file mapped from its start (page-aligned),
     * are in the page cache; false when it cannot tell. The pages are probed {@link #PROBE_PAGES} at a time, and the
     * probe stops once the answer is known: a cold file is known to be one after a tenth of its pages. The counts are
     * taken from a heap copy of the vector, a long at a time: a process's first probe runs interpreted, and a page at a
     * time through the segment was slow there. The first probe of a new process, a 1 GiB file, two runs each: cold
     * 4.5-5.3 ms, against 29-30 ms when all pages were probed in one call and counted a byte at a time through the
     * segment; hot 19-20 ms, against 35-38 ms. Any thread.
     */
    static boolean hot(MemorySegment mapping) {
        long size = mapping.byteSize();
        if (MINCORE == null || size == 0 || mapping.address() % PAGE != 0) {
            return false;
        }
        long pages = (size + PAGE - 1) / PAGE;
        long needed = (long) Math.ceil(HOT * pages);
        long resident = 0;
        long absent = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment vec = arena.allocate(PROBE_PAGES, Long.BYTES);
            long[] words = new long[PROBE_PAGES / Long.BYTES];
            for (long first = 0; first < pages; first += PROBE_PAGES) {
                int n = (int) Math.min(PROBE_PAGES, pages - first);
                vec.fill((byte) 0); // a last, shorter probe leaves the bytes past its pages as they were
                MemorySegment probed = mapping.asSlice(first * PAGE, Math.min((long) n * PAGE, size - first * PAGE));
                int rc = (int) MINCORE.invokeExact(probed, probed.byteSize(), vec);
                if (rc != 0) {
                    return false;
                }
                int count = (n + Long.BYTES - 1) / Long.BYTES;
                MemorySegment.copy(vec, ValueLayout.JAVA_LONG_UNALIGNED, 0, words, 0, count);
                long in = 0;
                for (int i = 0; i < count; i++) {
                    in += Long.bitCount(words[i] & RESIDENT_BITS); // the low bit of each byte; the others are undefined
                }
                resident += in;
                absent += n - in;
                if (resident >= needed || absent > pages - needed) {
                    break;
                }
            }
            return resident >= needed;
        } catch (Throwable e) { // invokeExact declares Throwable; nothing here may fail a read
            LOG.log(Level.DEBUG, "mincore failed; the file is read as cold", e);
            return false;
        }
    }
}
