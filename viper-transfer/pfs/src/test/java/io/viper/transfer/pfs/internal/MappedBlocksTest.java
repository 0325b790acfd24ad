package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperCorruptDataException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Manifest;
import io.viper.spi.ReadLease;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A version kept as blocks, mapped in place ({@link MappedBlocks}): the block files' pages themselves, in one data
 * section, where blocks start on page boundaries; the rest read; every byte as stored and reported once; bad block
 * files refused before anything is mapped; nothing mapped after close.
 */
class MappedBlocksTest extends PfsRepositoryTestBase {
    private static final long BLOCK = 4096;

    private final List<AutoCloseable> opened = new ArrayList<>();

    @AfterEach
    void closeOpened() throws Exception {
        for (AutoCloseable c : opened.reversed()) {
            c.close();
        }
    }

    /** A version of tensors of {@code sizes}, stored as blocks of 4 KiB; its manifest located there. */
    private Manifest stored(long... sizes) {
        TestStagedCheckpoint s = staged("m", 1, sizes);
        Manifest m = s.manifestWithBlocks(BLOCK);
        try (ReadLease lease = s.tryLease()) {
            m = m.replaceLocations(List.of(repo(3).store(m, s)));
        }
        assertTrue(Files.notExists(Path.of(m.locations().getFirst().uri())), "kept as blocks, no file");
        return m;
    }

    private Optional<TransportClient.MappedData> map(Manifest m) {
        FileTransportClient client = new FileTransportClient();
        opened.add(client);
        Optional<TransportClient.MappedData> mapped =
                client.map(m, m.locations().getFirst());
        mapped.ifPresent(opened::add);
        return mapped;
    }

    private List<Path> blockFiles() throws IOException {
        try (Stream<Path> s = Files.walk(root.resolve(BlockStore.DIR))) {
            return s.filter(Files::isRegularFile).toList();
        }
    }

    /** Lines of /proc/self/maps for block files of this test's store: the pages mapped in place. */
    private List<String> blockMappings() throws IOException {
        String store = root.resolve(BlockStore.DIR).toRealPath().toString();
        return Files.readAllLines(Path.of("/proc/self/maps")).stream()
                .filter(l -> l.contains(store))
                .toList();
    }

    private static void assertCoverOnce(List<long[]> ranges, long total) {
        ranges.sort(Comparator.comparingLong(r -> r[0]));
        long next = 0;
        for (long[] r : ranges) {
            assertEquals(next, r[0], "ranges meet end to end");
            next = r[0] + r[1];
        }
        assertEquals(total, next, "every byte of the data section reported");
    }

    @Test
    void blocksOnPageBoundariesAreTheFilesOwnPagesTheRestIsReadAndEveryByteIsAsStored() throws IOException {
        // t0: 60 whole pages and a 100-byte block (its page read); t1 starts mid-page: its 4 blocks are read
        Manifest m = stored(60 * BLOCK + 100, 4 * BLOCK);
        TransportClient.MappedData mapped = map(m).orElseThrow();
        MemorySegment data = mapped.data();
        assertEquals(m.totalBytes(), data.byteSize());
        assertTrue(data.isReadOnly());
        assertTrue(blockMappings().size() >= 1, "block files mapped into this process");

        List<long[]> reported = new ArrayList<>();
        mapped.populate((offset, length) -> reported.add(new long[] {offset, length}));
        assertCoverOnce(reported, m.totalBytes());
        assertTrue(reported.size() >= 60, "each block mapped in place reported as it is in: " + reported.size());

        assertEquals(-1, PfsBlockStoreTest.readBack(m).mismatch(data), "the same bytes as a read of the blocks");

        mapped.close();
        assertThrows(IllegalStateException.class, () -> data.get(ValueLayout.JAVA_BYTE, 0));
        assertEquals(List.of(), blockMappings(), "nothing left mapped after close");
    }

    @Test
    void aVersionMostlyOffPageBoundariesIsNotMapped() {
        Manifest m = stored(100, 64 * BLOCK);
        assertEquals(Optional.empty(), map(m), "read into a receive buffer instead");
    }

    @Test
    void aShortBlockFileIsRefusedBeforeItIsMapped() throws IOException {
        Manifest m = stored(16 * BLOCK);
        for (Path f : blockFiles()) {
            try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
                ch.truncate(10);
            }
        }
        ViperCorruptDataException e = assertThrows(ViperCorruptDataException.class, () -> map(m));
        assertTrue(e.getMessage().contains("holds 10 bytes, not its 4096"), e.getMessage());
        assertEquals(List.of(), blockMappings(), "nothing left mapped after the failure");
    }

    @Test
    void aMissingBlockFileIsNotFound() throws IOException {
        Manifest m = stored(16 * BLOCK);
        for (Path f : blockFiles()) {
            Files.delete(f);
        }
        ViperNotFoundException e = assertThrows(ViperNotFoundException.class, () -> map(m));
        assertTrue(e.getMessage().contains("missing from the block store"), e.getMessage());
    }

    @Test
    void oneBlockMissingAmongManyFailsTheMapAndLeavesNoBlockMapped() throws IOException {
        // 64 blocks, mapped in several runs at once: the others map their blocks before the one missing is found
        Manifest m = stored(64 * BLOCK);
        List<Path> files = blockFiles();
        Files.delete(files.get(files.size() / 2));
        ViperNotFoundException e = assertThrows(ViperNotFoundException.class, () -> map(m));
        assertTrue(e.getMessage().contains("missing from the block store"), e.getMessage());
        assertEquals(List.of(), blockMappings(), "the blocks the other runs mapped are unmapped");
    }

    @Test
    void aFifoPlantedForABlockFileIsRefusedWithoutWaitingForAWriter() throws Exception {
        Manifest m = stored(16 * BLOCK);
        Path block = blockFiles().getFirst();
        Files.delete(block);
        assertEquals(0, new ProcessBuilder("mkfifo", block.toString()).start().waitFor(), "mkfifo");
        // an open for reading of a FIFO waits for a writer, unless it does not block
        ViperCorruptDataException e = assertTimeoutPreemptively(
                Duration.ofSeconds(30), () -> assertThrows(ViperCorruptDataException.class, () -> map(m)));
        assertTrue(e.getMessage().contains(block + ": block of"), e.getMessage());
        assertEquals(List.of(), blockMappings(), "nothing left mapped after the failure");
    }

    @Test
    void aVersionOfMoreBlocksThanItMayMapIsRead() {
        assertTrue(MappedBlocks.MAX_BLOCKS > 1000, "a quarter of vm.max_map_count: " + MappedBlocks.MAX_BLOCKS);
        Manifest m = stored(16 * BLOCK);
        BlockReader blocks = new BlockReader(m, Path.of(m.locations().getFirst().uri()));
        assertEquals(Optional.empty(), MappedBlocks.map(blocks, m.totalBytes(), 15), "each block is a mapping");
        try (TransportClient.MappedData mapped =
                MappedBlocks.map(blocks, m.totalBytes(), 16).orElseThrow()) {
            assertEquals(m.totalBytes(), mapped.data().byteSize(), "at the limit it maps");
        }
    }
}
