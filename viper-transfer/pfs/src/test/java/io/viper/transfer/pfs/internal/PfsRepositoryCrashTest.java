package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The repository under failure: a store that fails midway, a reader during a store, what crashed writers and full disks
 * leave, and the repair when the next producer starts.
 */
class PfsRepositoryCrashTest extends PfsRepositoryTestBase {
    @Test
    void storeFailingMidCopyLeavesEarlierVersionsAndLatestIntact() throws IOException {
        AtomicBoolean diskFull = new AtomicBoolean();
        AtomicInteger chunks = new AtomicInteger();
        PfsRepository repo = repo(3, new WriteHooks() {
            @Override
            public void beforeChunk(Path file, long position) throws IOException {
                chunks.incrementAndGet();
                if (diskFull.get() && position > 0) {
                    throw new FileSystemException(file.toString(), null, "No space left on device");
                }
            }
        });
        TestStagedCheckpoint v1 = staged(1);
        store(repo, v1);
        diskFull.set(true);
        chunks.set(0);
        ViperException e = assertThrows(ViperException.class, () -> store(repo, staged(2)));
        assertEquals(ViperException.Reason.IO, e.reason());
        assertFalse(e.isRetriable());
        assertTrue(
                e.getMessage().contains("nt3 v2")
                        && e.getMessage().contains("No space left on device")
                        && e.getMessage().contains(modelDir().resolve("2").toString()),
                e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one-line message");
        assertEquals(2, chunks.get(), "failed on the second chunk, mid-copy");

        assertEquals("1\n", latestFile());
        assertEquals(List.of(1L), repo.versions(MODEL));
        assertEquals(List.of(), hiddenEntries(), "temporary directory removed");
        Manifest m = repo.latest(MODEL).orElseThrow();
        assertEquals(1, m.version());
        assertEquals(-1, v1.data().mismatch(readBack(m)), "version 1 untouched");

        diskFull.set(false);
        store(repo, staged(2));
        assertEquals(List.of(1L, 2L), repo.versions(MODEL), "a retry succeeds");
    }

    @Test
    void stagedMemoryThatBecomesUnreadableFailsTheStoreCleanly() throws IOException {
        PfsRepository repo = repo(3);
        store(repo, staged(1));
        TestStagedCheckpoint v2 = new TestStagedCheckpoint(MODEL, 2, seedOf(2), 100_000);
        Manifest manifest = v2.manifest();
        v2.close(); // the producer freed the buffer it should have kept leased
        ViperException e = assertThrows(ViperException.class, () -> repo.store(manifest, v2));
        assertTrue(e.getMessage().contains("nt3 v2"), e.getMessage());
        assertEquals("1\n", latestFile());
        assertEquals(List.of(1L), repo.versions(MODEL));
        assertEquals(List.of(), hiddenEntries());
    }

    @Test
    void aVersionIsInvisibleUntilItsDirectoryIsRenamed() throws Exception {
        CountDownLatch atCommit = new CountDownLatch(1);
        CountDownLatch crash = new CountDownLatch(1);
        AtomicReference<Path> tmpDir = new AtomicReference<>();
        PfsRepository writer = repo(3, new WriteHooks() {
            @Override
            public void beforeCommit(Path temporaryDirectory) throws IOException {
                if (temporaryDirectory.getFileName().toString().startsWith(".tmp-2-")) {
                    tmpDir.set(temporaryDirectory);
                    atCommit.countDown();
                    try {
                        crash.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    throw new IOException("simulated crash between the data write and the rename");
                }
            }
        });
        store(writer, staged(1));
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                store(writer, staged(2));
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        assertTrue(atCommit.await(30, TimeUnit.SECONDS));

        // The data and manifest are written and fsynced, not yet renamed: nobody sees version 2.
        assertTrue(Files.isRegularFile(tmpDir.get().resolve(PfsRepository.DATA_FILE)));
        assertTrue(Files.isRegularFile(tmpDir.get().resolve(PfsRepository.MANIFEST_FILE)));
        try (PfsRepository reader = new PfsRepository(root, 3)) {
            assertEquals(List.of(1L), reader.versions(MODEL));
            assertEquals(1, reader.latest(MODEL).orElseThrow().version());
            assertEquals(Optional.empty(), reader.find(MODEL, 2));
        }
        assertEquals("1\n", latestFile());

        crash.countDown();
        t.join();
        assertTrue(
                failure.get() instanceof ViperException v && v.reason() == ViperException.Reason.IO,
                String.valueOf(failure.get()));
        assertEquals(List.of(1L), writer.versions(MODEL));
        assertEquals(List.of(), hiddenEntries());
    }

    @Test
    void leftoversOfCrashedWritersAreIgnoredAndStaleOnesCleaned() throws IOException {
        PfsRepository repo = repo(3);
        store(repo, staged(1));
        Path v1 = modelDir().resolve("1");
        // A complete but never renamed version (writer killed before the rename), an hour old.
        Path stale = Files.createDirectory(modelDir().resolve(".tmp-7-dead"));
        Files.copy(v1.resolve(PfsRepository.DATA_FILE), stale.resolve(PfsRepository.DATA_FILE));
        Files.copy(v1.resolve(PfsRepository.MANIFEST_FILE), stale.resolve(PfsRepository.MANIFEST_FILE));
        FileTime old = FileTime.from(Instant.now().minus(Duration.ofHours(2)));
        Files.setLastModifiedTime(stale.resolve(PfsRepository.DATA_FILE), old);
        Files.setLastModifiedTime(stale.resolve(PfsRepository.MANIFEST_FILE), old);
        Files.setLastModifiedTime(stale, old);
        // One that may belong to a writer still at work, a LATEST temp file, and a half-deleted version.
        Path fresh = Files.createDirectory(modelDir().resolve(".tmp-8-busy"));
        Path oldLatestTmp = Files.writeString(modelDir().resolve(".LATEST.tmp-1"), "7\n");
        Files.setLastModifiedTime(oldLatestTmp, old);
        Path grave = Files.createDirectory(modelDir().resolve(".del-0-x"));
        Files.writeString(grave.resolve("junk"), "x");
        // Entries that are not version directories.
        Files.writeString(modelDir().resolve("notes.txt"), "hello");
        Files.createDirectory(modelDir().resolve("007"));
        Files.createDirectory(modelDir().resolve("abc"));
        Files.createDirectory(modelDir().resolve("99999999999999999999"));

        assertEquals(List.of(1L), repo.versions(MODEL));
        assertEquals(1, repo.latest(MODEL).orElseThrow().version());

        store(repo, staged(2));
        assertFalse(Files.exists(stale), "stale temporary version removed");
        assertFalse(Files.exists(oldLatestTmp), "stale LATEST temp removed");
        assertFalse(Files.exists(grave), "half-deleted version removed");
        assertTrue(Files.exists(fresh), "a recent temporary directory may be in use and is kept");
        assertTrue(
                Files.exists(modelDir().resolve("notes.txt"))
                        && Files.exists(modelDir().resolve("abc")),
                "foreign entries kept");
        assertEquals(List.of(1L, 2L), repo.versions(MODEL));
    }

    @Test
    void aFullDiskWhenLatestIsReplacedIsRepairedWhenTheNextProducerStarts() throws IOException {
        AtomicBoolean diskFull = new AtomicBoolean();
        PfsRepository repo = repo(3, new WriteHooks() {
            @Override
            public void beforeLatest(Path modelDirectory) throws IOException {
                if (diskFull.get()) {
                    throw new FileSystemException(
                            modelDirectory.resolve("LATEST").toString(), null, "No space left on device");
                }
            }
        });
        TestStagedCheckpoint v1 = staged(1);
        store(repo, v1);
        diskFull.set(true);
        ViperException e = assertThrows(ViperException.class, () -> store(repo, staged(2)));
        assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
        assertEquals("1\n", latestFile(), "LATEST still names the version before");
        assertEquals(1, repo.latest(MODEL).orElseThrow().version(), "readers keep v1");
        assertEquals(-1, v1.data().mismatch(readBack(repo.latest(MODEL).orElseThrow())));

        diskFull.set(false);
        try (PfsRepository restarted = new PfsRepository(root, 3)) {
            assertEquals(
                    2,
                    restarted.recover(MODEL),
                    "the complete v2 is the newest version: the producer numbers after it");
            assertEquals("2\n", latestFile(), "LATEST repaired");
            TestStagedCheckpoint v3 = staged(3);
            store(restarted, v3);
            assertEquals(List.of(1L, 2L, 3L), restarted.versions(MODEL));
            assertEquals(-1, v3.data().mismatch(readBack(restarted.latest(MODEL).orElseThrow())));
        }
    }

    @Test
    void recoverRemovesEveryTemporaryEntryOfACrashedWriter() throws IOException {
        PfsRepository repo = repo(3);
        store(repo, staged(1));
        Path partial = Files.createDirectory(modelDir().resolve(".tmp-2-crashed"));
        Files.write(partial.resolve(PfsRepository.DATA_FILE), new byte[4096]);
        Path latestTmp = Files.writeString(modelDir().resolve(".LATEST.tmp-5"), "2\n");
        assertEquals(1, repo.recover(MODEL));
        assertFalse(
                Files.exists(partial),
                "a partial temporary version of a crashed writer is removed at once, not after an hour");
        assertFalse(Files.exists(latestTmp));
        assertEquals(List.of(), hiddenEntries());
        assertEquals(0, repo.recover("never-stored"), "a model without a directory has no version");
    }

    /**
     * A reader loops over {@code latest()} and reads (or maps) the version while a writer stores 25 versions under
     * retention 2: every read either returns exactly that version's bytes or, when retention removed it in between,
     * fails retriably; the versions seen never go backwards.
     */
    @Test
    void concurrentReaderNeverSeesAPartialVersion() throws Exception {
        PfsRepository writer = repo(2);
        int versions = 25;
        AtomicBoolean done = new AtomicBoolean();
        AtomicReference<Throwable> readerFailure = new AtomicReference<>();
        AtomicInteger verified = new AtomicInteger();
        AtomicInteger gone = new AtomicInteger();
        Thread reader = Thread.ofPlatform().name("reader").start(() -> {
            long lastSeen = 0;
            try (PfsRepository repo = new PfsRepository(root, 2);
                    FileTransportClient client = new FileTransportClient()) {
                int i = 0;
                while (!done.get() || i == 0) {
                    Optional<Manifest> latest = repo.latest(MODEL);
                    if (latest.isEmpty()) {
                        Thread.onSpinWait();
                        continue;
                    }
                    Manifest m = latest.get();
                    if (m.version() < lastSeen) {
                        throw new AssertionError("latest went back from v" + lastSeen + " to v" + m.version());
                    }
                    lastSeen = m.version();
                    MemorySegment expected = expectedBytes(m.version(), m.totalBytes());
                    try {
                        if (i++ % 2 == 0) {
                            try (Arena arena = Arena.ofConfined()) {
                                MemorySegment dst = arena.allocate(m.totalBytes());
                                client.read(
                                        m, m.locations().getFirst(), List.of(new ByteRange(0, m.totalBytes(), 0)), dst);
                                if (dst.mismatch(expected) != -1) {
                                    throw new AssertionError("v" + m.version() + ": wrong bytes read");
                                }
                            }
                        } else {
                            try (var mapped =
                                    client.map(m, m.locations().getFirst()).orElseThrow()) {
                                if (mapped.data().mismatch(expected) != -1) {
                                    throw new AssertionError("v" + m.version() + ": wrong bytes mapped");
                                }
                            }
                        }
                        verified.incrementAndGet();
                    } catch (ViperNotFoundException e) {
                        gone.incrementAndGet();
                    }
                }
            } catch (Throwable e) {
                readerFailure.set(e);
            }
        });
        try {
            for (long v = 1; v <= versions; v++) {
                store(writer, staged(MODEL, v, 200_000, 13, 65_536));
            }
        } finally {
            done.set(true);
            reader.join();
        }
        if (readerFailure.get() != null) {
            throw new AssertionError("reader failed after " + verified.get() + " verified reads", readerFailure.get());
        }
        assertTrue(verified.get() > 0, "the reader verified some versions");
        assertEquals(List.of(versions - 1L, (long) versions), writer.versions(MODEL));
        System.out.println("concurrent reader: " + verified.get() + " verified reads, " + gone.get()
                + " versions deleted before the read");
    }
}
