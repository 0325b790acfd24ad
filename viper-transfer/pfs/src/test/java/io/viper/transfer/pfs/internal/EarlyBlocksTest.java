package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.PendingStore;
import io.viper.spi.ReadLease;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Blocks written while the producer still hashes a version ({@link EarlyBlocks}): written before the store is asked,
 * renamed only by it, gone when it is not stored, and never in the way of the store when writing them fails.
 */
class EarlyBlocksTest extends PfsRepositoryTestBase {
    private static final long BLOCK = 4096;
    /** 16 blocks in t0, 3 and a partial one in t1. */
    private static final long[] SIZES = {16 * BLOCK, 3 * BLOCK + 100};

    /** Hooks that count the blocks written (each block is one chunk). */
    private static WriteHooks counting(AtomicInteger chunks) {
        return new WriteHooks() {
            @Override
            public void beforeChunk(Path file, long position) {
                chunks.incrementAndGet();
            }
        };
    }

    private TestStagedCheckpoint version(long v) {
        return staged("m", v, SIZES);
    }

    /** Names every block of {@code m} to {@code pending}, as the producer's hashing does. */
    private static void hashAll(Manifest m, PendingStore pending) {
        for (TensorEntry e : m.tensors()) {
            for (int j = 0; j < e.blocks().ids().size(); j++) {
                pending.blockHashed(
                        e.info().offset() + e.blocks().start(j),
                        e.blocks().length(j, e.info().length()),
                        e.blocks().ids().get(j));
            }
        }
    }

    private List<Path> files(boolean temporary) throws IOException {
        Path dir = root.resolve(BlockStore.DIR);
        if (!Files.exists(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(Files::isRegularFile)
                    .filter(p -> p.getFileName().toString().startsWith(".tmp-") == temporary)
                    .toList();
        }
    }

    private List<Path> temporaryFiles() throws IOException {
        return files(true);
    }

    private List<Path> blocks() throws IOException {
        return files(false);
    }

    private void awaitTemporaryFiles(int n) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (temporaryFiles().size() < n) {
            assertTrue(
                    System.nanoTime() < deadline,
                    "blocks written early: " + temporaryFiles().size() + " of " + n);
            Thread.sleep(10);
        }
    }

    private static Manifest store(PendingStore pending, Manifest m, TestStagedCheckpoint s) {
        try (ReadLease lease = s.tryLease()) {
            return m.replaceLocations(List.of(pending.store(m, s)));
        }
    }

    @Test
    void blocksAreWrittenAsTheyAreHashedAndBecomeVisibleOnlyWhenTheVersionIsStored() throws Exception {
        AtomicInteger chunks = new AtomicInteger();
        PfsRepository repo = repo(3, counting(chunks));
        TestStagedCheckpoint s = version(1);
        Manifest m = s.manifestWithBlocks(BLOCK);
        try (PendingStore pending = repo.begin("m", 1, s.data())) {
            hashAll(m, pending);
            awaitTemporaryFiles(20); // before the store is asked: the flush overlaps the hashing
            assertEquals(List.of(), blocks(), "no block has its name before the version is stored");
            assertTrue(repo.versions("m").isEmpty());
            Manifest stored = store(pending, m, s);
            assertEquals(
                    s.data().mismatch(PfsBlockStoreTest.readBack(stored)),
                    -1,
                    "the stored version reads back byte for byte");
        }
        assertEquals(20, blocks().size());
        assertEquals(List.of(), temporaryFiles());
        assertEquals(20, chunks.get(), "each block written once, early, none again by the store");
        assertEquals(List.of(1L), repo.versions("m"));
    }

    @Test
    void aVersionNotStoredLeavesNothingBehind() throws Exception {
        PfsRepository repo = repo(3);
        TestStagedCheckpoint s = version(1);
        Manifest m = s.manifestWithBlocks(BLOCK);
        try (PendingStore pending = repo.begin("m", 1, s.data())) {
            hashAll(m, pending);
            awaitTemporaryFiles(20);
        } // the announcement failed, say: closed without a store
        assertEquals(List.of(), temporaryFiles());
        assertEquals(List.of(), blocks());
        assertTrue(repo.versions("m").isEmpty());
    }

    @Test
    void aFailedEarlyWriteLeavesTheBlocksToTheStore() throws Exception {
        AtomicInteger chunks = new AtomicInteger();
        PfsRepository repo = repo(3, new WriteHooks() {
            @Override
            public void beforeChunk(Path file, long position) throws IOException {
                if (chunks.incrementAndGet() == 3) {
                    throw new IOException("No space left on device (injected)");
                }
            }
        });
        TestStagedCheckpoint s = version(1);
        Manifest m = s.manifestWithBlocks(BLOCK);
        Manifest stored;
        try (PendingStore pending = repo.begin("m", 1, s.data())) {
            hashAll(m, pending);
            stored = store(pending, m, s);
        }
        assertEquals(s.data().mismatch(PfsBlockStoreTest.readBack(stored)), -1);
        assertEquals(20, blocks().size());
        assertEquals(List.of(), temporaryFiles());
        assertEquals(
                3 + 20, chunks.get(), "three tried early, the third failed and all were dropped; the store wrote 20");
    }

    @Test
    void blocksTheStoreHoldsAreNotWrittenAgain() throws Exception {
        AtomicInteger chunks = new AtomicInteger();
        PfsRepository repo = repo(3, counting(chunks));
        TestStagedCheckpoint v1 = version(1);
        try (PendingStore pending = repo.begin("m", 1, v1.data())) {
            store(pending, v1.manifestWithBlocks(BLOCK), v1); // nothing named early: the store writes all
        }
        assertEquals(20, chunks.get());
        TestStagedCheckpoint v2 = staged("m", 2, SIZES);
        v2.writableData().copyFrom(v1.data()); // the same bytes
        Manifest m2 = v2.manifestWithBlocks(BLOCK);
        Manifest stored;
        try (PendingStore pending = repo.begin("m", 2, v2.data())) {
            hashAll(m2, pending);
            stored = store(pending, m2, v2);
        }
        assertEquals(20, chunks.get(), "every block was there: none written again");
        assertEquals(v2.data().mismatch(PfsBlockStoreTest.readBack(stored)), -1);
        assertFalse(blocks().isEmpty());
        assertEquals(List.of(), temporaryFiles());
    }

    @Test
    void theRetentionRunsWhenThePendingStoreClosesAfterTheAnnouncementNotInTheStore() throws Exception {
        PfsRepository repo = repo(1);
        for (long v = 1; v <= 2; v++) {
            TestStagedCheckpoint s = version(v);
            Manifest m = v == 1 ? s.manifest() : s.manifestWithBlocks(BLOCK); // v1 a file, v2 blocks
            try (PendingStore pending = repo.begin("m", v, s.data())) {
                hashAll(m, pending);
                store(pending, m, s);
                assertEquals(v == 1 ? List.of(1L) : List.of(1L, 2L), repo.versions("m"), "stored, not yet retained");
            }
            assertEquals(List.of(v), repo.versions("m"), "closed: the retention of 1 ran");
        }
        assertEquals(20, blocks().size());
    }
}
