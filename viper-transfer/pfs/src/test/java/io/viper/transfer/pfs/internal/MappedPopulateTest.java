package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ReadLease;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A mapped version brought into memory on request ({@code MappedData.populate}): every byte of the data section is
 * reported once, in data-section offsets; a cold file in several pieces as they are read, so that the consumer verifies
 * each as it lands, and a hot one at once.
 */
class MappedPopulateTest {
    private static final int POSIX_FADV_DONTNEED = 4;

    @TempDir
    Path root;

    /** Drops the file's clean pages from the page cache (no root needed): it is cold again. */
    private static void evict(Path file) throws Throwable {
        Linker linker = Linker.nativeLinker();
        var lookup = linker.defaultLookup();
        MethodHandle open = linker.downcallHandle(
                lookup.findOrThrow("open"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        MethodHandle fadvise = linker.downcallHandle(
                lookup.findOrThrow("posix_fadvise"),
                FunctionDescriptor.of(
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT));
        MethodHandle close = linker.downcallHandle(
                lookup.findOrThrow("close"), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) open.invokeExact(arena.allocateFrom(file.toString()), 0);
            assertTrue(fd >= 0, "open " + file);
            try {
                assertEquals(0, (int) fadvise.invokeExact(fd, 0L, 0L, POSIX_FADV_DONTNEED));
            } finally {
                int rc = (int) close.invokeExact(fd);
                assertEquals(0, rc);
            }
        }
    }

    private static List<long[]> populate(TransportClient.MappedData mapped) {
        List<long[]> reported = new ArrayList<>();
        mapped.populate((offset, length) -> reported.add(new long[] {offset, length}));
        reported.sort(Comparator.comparingLong(r -> r[0]));
        return reported;
    }

    /** The ranges cover {@code [0, total)} once, without gaps or overlaps. */
    private static void assertCoverOnce(List<long[]> ranges, long total) {
        long next = 0;
        for (long[] r : ranges) {
            assertEquals(next, r[0], "ranges meet end to end");
            assertTrue(r[1] > 0);
            next = r[0] + r[1];
        }
        assertEquals(total, next, "every byte of the data section reported");
    }

    @Test
    void aColdFileIsReportedPieceByPieceAndAHotOneAtOnce() throws Throwable {
        // 18 MiB of tensors and a header: the data section starts inside the first 4 MiB piece and ends mid-piece
        long mib = 1 << 20;
        try (PfsRepository repo = new PfsRepository(root, 3);
                FileTransportClient client = new FileTransportClient();
                TestStagedCheckpoint staged = new TestStagedCheckpoint("m", 1, 7, 10 * mib + 3, 8 * mib - 3)) {
            Location location;
            try (ReadLease lease = staged.tryLease()) {
                assertNotNull(lease);
                location = repo.store(staged.manifest(), staged);
            }
            Manifest m = repo.latest("m").orElseThrow();
            Path file = Path.of(location.uri());

            evict(file);
            try (TransportClient.MappedData mapped = client.map(m, location).orElseThrow()) {
                assertTrue(Residency.resident(mapped.data()) < Residency.HOT, "evicted: the mapping is cold before");
                List<long[]> cold = populate(mapped);
                assertCoverOnce(cold, m.totalBytes());
                assertTrue(cold.size() >= 5, "a cold file comes in 4 MiB pieces, each reported: " + cold.size());
                assertEquals(-1, staged.data().mismatch(mapped.data()));
            }
            try (TransportClient.MappedData mapped = client.map(m, location).orElseThrow()) {
                List<long[]> hot = populate(mapped);
                assertEquals(1, hot.size(), "a file in the page cache is reported at once");
                assertCoverOnce(hot, m.totalBytes());
            }
        }
    }
}
