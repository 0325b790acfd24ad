package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperCorruptDataException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.hash.ContentHash;
import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.ReadLease;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The PFS repository's block store: versions with blocks are kept as references to shared, content-addressed block
 * files; writes and deletes stay crash-safe and every retained version reads back byte for byte.
 */
@Timeout(60)
class PfsBlockStoreTest {
    private static final long BLOCK = 4096;
    /** 64 blocks: 60 in t0, 4 in t1. */
    private static final long[] SIZES = {60 * BLOCK, 4 * BLOCK};

    @TempDir
    Path root;

    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = closeables.size() - 1; i >= 0; i--) {
            closeables.get(i).close();
        }
    }

    private PfsRepository repo(int retention, WriteHooks hooks) {
        PfsRepository r = new PfsRepository(root, retention, 4096, hooks, Duration.ZERO);
        closeables.add(r);
        return r;
    }

    /**
     * Version {@code v} of {@code model}: {@code base}'s bytes (or random ones) with {@code changed} blocks of t0
     * rewritten.
     */
    private TestStagedCheckpoint version(String model, long v, TestStagedCheckpoint base, int... changed) {
        TestStagedCheckpoint s = new TestStagedCheckpoint(model, v, v, SIZES);
        closeables.add(s);
        if (base != null) {
            s.writableData().copyFrom(base.data());
        }
        SplittableRandom rnd = new SplittableRandom(v * 31);
        for (int block : changed) {
            s.writableData().set(ValueLayout.JAVA_LONG_UNALIGNED, block * BLOCK + 8, rnd.nextLong());
        }
        return s;
    }

    private static Manifest store(PfsRepository repo, TestStagedCheckpoint s) {
        Manifest m = s.manifestWithBlocks(BLOCK);
        try (ReadLease lease = s.tryLease()) {
            return m.replaceLocations(List.of(repo.store(m, s)));
        }
    }

    /** Reads all of {@code m} from its first location, as a consumer would. */
    static MemorySegment readBack(Manifest m) {
        MemorySegment dst = Arena.ofAuto().allocate(m.totalBytes());
        try (FileTransportClient c = new FileTransportClient()) {
            c.read(m, m.locations().getFirst(), List.of(new ByteRange(0, m.totalBytes(), 0)), dst);
        }
        return dst;
    }

    private List<Path> blockFiles() throws IOException {
        try (Stream<Path> s = Files.walk(root.resolve(BlockStore.DIR))) {
            return s.filter(Files::isRegularFile).toList();
        }
    }

    private long blockBytes() throws IOException {
        long n = 0;
        for (Path p : blockFiles()) {
            n += Files.size(p);
        }
        return n;
    }

    @Test
    void tenVersionsDifferingInFivePercentOfTheirBlocksTakeAboutOneAndAHalfVersionsOfSpace() throws IOException {
        PfsRepository repo = repo(10, WriteHooks.NONE);
        List<Manifest> stored = new ArrayList<>();
        List<TestStagedCheckpoint> versions = new ArrayList<>();
        TestStagedCheckpoint previous = null;
        for (int v = 1; v <= 10; v++) {
            previous = version("m", v, previous, v, v + 10, v + 20); // 3 of 64 blocks: 4.7%
            versions.add(previous);
            stored.add(store(repo, previous));
        }
        long one = SIZES[0] + SIZES[1];
        assertEquals(one + 9 * 3 * BLOCK, blockBytes(), "each version added only its 3 new blocks");
        assertTrue(blockBytes() <= 1.6 * one, "10 versions take " + blockBytes() / (double) one + " versions of space");
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L), repo.versions("m"));
        assertFalse(
                Files.exists(root.resolve("m/10").resolve(PfsRepository.DATA_FILE)),
                "a version kept as blocks has no safetensors file");
        for (int i = 0; i < 10; i++) {
            assertEquals(
                    -1,
                    versions.get(i).data().mismatch(readBack(stored.get(i))),
                    "v" + (i + 1) + " reads back byte for byte");
            assertEquals(
                    stored.get(i).tensors(), repo.find("m", i + 1).orElseThrow().tensors());
        }
        try (FileTransportClient c = new FileTransportClient();
                var mapped = c.map(
                                stored.getLast(), stored.getLast().locations().getFirst())
                        .orElseThrow()) {
            mapped.populate(TransportClient.Arrivals.NONE);
            assertEquals(-1, versions.getLast().data().mismatch(mapped.data()), "its blocks mapped in place as one");
        }
    }

    @Test
    void withoutSyncfsEachNewBlockIsFsyncedAndTheVersionReadsBack() throws IOException {
        SyncFs.enabled = false;
        try {
            PfsRepository repo = repo(2, WriteHooks.NONE);
            TestStagedCheckpoint v1 = version("m", 1, null);
            TestStagedCheckpoint v2 = version("m", 2, v1, range(0, 64));
            store(repo, v1);
            Manifest m = store(repo, v2);
            assertEquals(-1, v2.data().mismatch(readBack(m)));
            assertTrue(blockFiles().stream()
                    .noneMatch(p -> p.getFileName().toString().startsWith(".tmp-")));
        } finally {
            SyncFs.enabled = true;
        }
    }

    /**
     * Issue 39 case 8: with the default grace, 10 versions that change most blocks, published a minute apart, leave at
     * most retention + 1 versions' worth of bytes under the repository (an hour's grace kept all 10).
     */
    @Test
    void retentionBoundsTheBlockStoreOnceAShortGraceHasPassed() throws IOException {
        int retention = 3;
        PfsRepository repo = new PfsRepository(root, retention, 4096, WriteHooks.NONE); // the default grace
        closeables.add(repo);
        List<Manifest> stored = new ArrayList<>();
        List<TestStagedCheckpoint> versions = new ArrayList<>();
        TestStagedCheckpoint previous = null;
        for (int v = 1; v <= 10; v++) {
            previous = version("m", v, previous, range(0, 50)); // 50 of 64 blocks change
            versions.add(previous);
            stored.add(store(repo, previous));
            backdateBlocks(Duration.ofMinutes(1)); // the next publish comes a minute later
        }
        long one = SIZES[0] + SIZES[1];
        long bytes;
        try (Stream<Path> s = Files.walk(root)) {
            bytes = s.filter(Files::isRegularFile)
                    .mapToLong(p -> p.toFile().length())
                    .sum();
        }
        assertTrue(
                bytes <= (retention + 1) * one,
                "the repository holds " + bytes / (double) one + " versions' worth of bytes, retention " + retention);
        assertEquals(List.of(8L, 9L, 10L), repo.versions("m"));
        for (int i = 7; i < 10; i++) {
            assertEquals(-1, versions.get(i).data().mismatch(readBack(stored.get(i))), "v" + (i + 1) + " is whole");
        }
    }

    /** A store in another process that reuses a block while a sweep deletes it keeps the block. */
    @Test
    void aBlockReusedWhileTheSweepDeletesItIsKept() throws IOException {
        List<Path> reused = new ArrayList<>();
        PfsRepository repo = repo(1, new WriteHooks() {
            @Override
            public void beforeBlockDelete(Path block) throws IOException {
                if (reused.isEmpty()) {
                    // what BlockStore.put does in another process that claims this block just now
                    Files.setLastModifiedTime(block, FileTime.from(Instant.now().plusMillis(1)));
                    reused.add(block);
                }
            }
        });
        TestStagedCheckpoint v1 = version("m", 1, null);
        store(repo, v1);
        store(repo, version("m", 2, v1, range(0, 20)));
        assertEquals(1, reused.size());
        assertTrue(Files.isRegularFile(reused.getFirst()), "the block claimed mid-sweep is still there");
        assertEquals(64 + 1, blockFiles().size(), "the other 19 blocks v1 alone had went");
    }

    private void backdateBlocks(Duration by) throws IOException {
        FileTime then = FileTime.from(Instant.now().minus(by));
        for (Path p : blockFiles()) {
            Files.setLastModifiedTime(p, then);
        }
    }

    @Test
    void twoModelsSharingBlocksDoNotCorruptEachOtherWhenOneIsDeleted() throws IOException {
        PfsRepository repo = repo(1, WriteHooks.NONE);
        TestStagedCheckpoint a1 = version("a", 1, null);
        Manifest ma1 = store(repo, a1);
        TestStagedCheckpoint b1 = version("b", 1, a1, 5); // b shares 63 of its 64 blocks with a v1
        Manifest mb1 = store(repo, b1);
        assertEquals(65, blockFiles().size());

        // a's next version shares nothing: retention deletes a v1, and with it only the block b does not use... none
        // but one.
        TestStagedCheckpoint a2 = version("a", 2, null);
        store(repo, a2);
        assertEquals(List.of(2L), repo.versions("a"));
        assertEquals(64 + 64, blockFiles().size(), "a v1's own block went, the 63 b shares stayed");
        assertEquals(-1, b1.data().mismatch(readBack(mb1)), "b v1 is intact");
        assertThrows(ViperNotFoundException.class, () -> readBack(ma1), "a v1 is gone");

        // The whole of model a deleted by hand: the next sweep (after b's retention) keeps every block b still uses.
        try (Stream<Path> s = Files.walk(root.resolve("a"))) {
            s.sorted((x, y) -> y.compareTo(x)).forEach(p -> p.toFile().delete());
        }
        TestStagedCheckpoint b2 = version("b", 2, b1, 7);
        Manifest mb2 = store(repo, b2);
        assertEquals(64, blockFiles().size(), "only b v2's blocks remain");
        assertEquals(-1, b2.data().mismatch(readBack(mb2)));
    }

    @Test
    void aCrashWhileWritingBlocksLeavesTheRepositoryReadableAndTheNextStoreCompletesIt() throws IOException {
        AtomicInteger writes = new AtomicInteger();
        AtomicInteger crashAt = new AtomicInteger(-1);
        PfsRepository repo = repo(3, new WriteHooks() {
            @Override
            public void beforeChunk(Path file, long position) throws IOException {
                if (writes.incrementAndGet() == crashAt.get()) {
                    throw new IOException("injected crash writing " + file.getFileName());
                }
            }
        });
        TestStagedCheckpoint v1 = version("m", 1, null);
        Manifest m1 = store(repo, v1);
        TestStagedCheckpoint v2 = version("m", 2, v1, 1, 2, 3, 4);
        crashAt.set(writes.get() + 3); // two of v2's four new blocks are written, then the store dies
        ViperException e = assertThrows(ViperException.class, () -> store(repo, v2));
        assertTrue(e.getMessage().contains("injected crash"), e.getMessage());
        assertEquals(1, repo.latest("m").orElseThrow().version(), "readers keep v1");
        assertEquals(-1, v1.data().mismatch(readBack(m1)));
        try (Stream<Path> s = Files.list(root.resolve("m"))) {
            assertTrue(s.noneMatch(p -> p.getFileName().toString().startsWith(".tmp-")), "no partial version stays");
        }
        assertEquals(
                64,
                blockFiles().size(),
                "the blocks the failed store wrote are removed (a full disk must not stay full of them)");
        Manifest m2 = store(repo, v2);
        assertEquals(-1, v2.data().mismatch(readBack(m2)), "the next store writes what the crash left out");
        assertEquals(64 + 4, blockFiles().size());
    }

    @Test
    void aCrashMidDeleteKeepsEveryRetainedVersionAndTheNextSweepFinishesTheJob() throws IOException {
        AtomicInteger deletes = new AtomicInteger();
        AtomicInteger crashAt = new AtomicInteger(-1);
        PfsRepository repo = repo(1, new WriteHooks() {
            @Override
            public void beforeBlockDelete(Path block) throws IOException {
                if (deletes.incrementAndGet() == crashAt.get()) {
                    throw new IOException("injected crash deleting " + block.getFileName());
                }
            }
        });
        TestStagedCheckpoint v1 = version("m", 1, null);
        store(repo, v1);
        crashAt.set(11); // v2 retires v1: 10 of its 20 own blocks go, then the sweep dies
        TestStagedCheckpoint v2 = version("m", 2, v1, range(0, 20));
        Manifest m2 = store(repo, v2);
        assertEquals(64 + 10, blockFiles().size(), "the interrupted sweep left 10 unreferenced blocks");
        assertEquals(-1, v2.data().mismatch(readBack(m2)), "the retained version is whole");
        TestStagedCheckpoint v3 = version("m", 3, v2, 40);
        Manifest m3 = store(repo, v3);
        assertEquals(64, blockFiles().size(), "the next sweep deleted the leftovers and v2's own block");
        assertEquals(-1, v3.data().mismatch(readBack(m3)));
    }

    @Test
    void aMissingBlockIsNotFoundAndAShortOneCorrupt() throws IOException {
        PfsRepository repo = repo(3, WriteHooks.NONE);
        TestStagedCheckpoint v1 = version("m", 1, null);
        Manifest m1 = store(repo, v1);
        ContentHash first = m1.tensors().getFirst().blocks().ids().getFirst();
        Path block = BlockStore.pathOf(root, first);
        try (FileChannel ch = FileChannel.open(block, StandardOpenOption.WRITE)) {
            ch.truncate(BLOCK - 1);
        }
        ViperCorruptDataException corrupt = assertThrows(ViperCorruptDataException.class, () -> readBack(m1));
        assertTrue(corrupt.getMessage().contains(block.toString()), corrupt.getMessage());
        Files.delete(block);
        ViperNotFoundException missing = assertThrows(ViperNotFoundException.class, () -> readBack(m1));
        assertTrue(missing.getMessage().contains("missing from the block store"), missing.getMessage());
        // Storing the version again repairs it (the manifest is the same: only the block is written).
        store(repo, version("m", 2, v1));
        assertEquals(-1, v1.data().mismatch(readBack(m1)));
    }

    @Test
    void scatteredRangesReadAcrossBlockBoundaries() {
        PfsRepository repo = repo(3, WriteHooks.NONE);
        TestStagedCheckpoint v1 = version("m", 1, null);
        Manifest m1 = store(repo, v1);
        List<ByteRange> ranges = List.of(
                new ByteRange(BLOCK - 5, 10, 0),
                new ByteRange(7 * BLOCK, 3 * BLOCK + 1, 10),
                new ByteRange(60 * BLOCK - 1, 2, 10 + 3 * BLOCK + 1));
        long total = 12 + 3 * BLOCK + 1;
        MemorySegment dst = Arena.ofAuto().allocate(total);
        Set<Long> reported = new HashSet<>();
        try (FileTransportClient c = new FileTransportClient()) {
            c.read(m1, m1.locations().getFirst(), ranges, dst, (at, len) -> {
                for (long i = at; i < at + len; i++) {
                    assertTrue(reported.add(i), "byte " + i + " reported once");
                }
            });
        }
        assertEquals(total, reported.size());
        for (ByteRange r : ranges) {
            assertEquals(
                    -1,
                    v1.data()
                            .asSlice(r.sourceOffset(), r.length())
                            .mismatch(dst.asSlice(r.destinationOffset(), r.length())));
        }
    }

    private static int[] range(int from, int to) {
        int[] out = new int[to - from];
        for (int i = from; i < to; i++) {
            out[i - from] = i;
        }
        return out;
    }
}
