package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.ReadLease;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
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
    @TempDir
    Path root;

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

            PageCacheControl.evict(file);
            try (TransportClient.MappedData mapped = client.map(m, location).orElseThrow()) {
                assertFalse(PageCacheControl.hot(file), "evicted: the file is cold before");
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
