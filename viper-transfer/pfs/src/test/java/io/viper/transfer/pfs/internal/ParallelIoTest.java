package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.manifest.Manifest;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The PFS's parallel I/O: files written in pieces from several threads, directly where the file system takes
 * {@code O_DIRECT} and buffered where it does not (tmpfs), read back in parallel ranged reads, and the page-cache
 * residency probe that picks between a mapping and those reads.
 */
class ParallelIoTest {
    /** Not a multiple of the block size nor of the piece size, with a head of odd length. */
    private static final long DATA = 3L * DirectIo.IO_CHUNK + 12_345;

    private static final byte[] HEAD = {1, 2, 3, 4, 5, 6, 7};

    private static final OpenOption DIRECT = DirectIo.direct;

    @TempDir
    Path dir;

    private final Arena arena = Arena.ofShared();

    @AfterEach
    void close() {
        DirectIo.direct = DIRECT;
        arena.close();
    }

    @Test
    void fileWrittenInParallelHoldsHeadThenDataExactly() throws IOException {
        MemorySegment data = random(DATA, 1);
        Path file = dir.resolve("f");
        ParallelWriter.writeFile(file, HEAD, data, 1 << 20, WriteHooks.NONE);
        assertFileIs(file, data);
    }

    @Test
    void withoutDirectIoTheSameBytesAreWrittenThroughThePageCache() throws IOException {
        DirectIo.direct = null;
        try (DirectIo.Target t = DirectIo.createNew(dir.resolve("probe"))) {
            assertFalse(t.direct());
        }
        MemorySegment data = random(DATA, 2);
        Path file = dir.resolve("f");
        ParallelWriter.writeFile(file, HEAD, data, 1 << 20, WriteHooks.NONE);
        assertFileIs(file, data);
    }

    @Test
    void whereTheFileSystemRefusesODirectTheWriteFallsBackToTheBufferedPath() throws IOException {
        DirectIo.direct = new OpenOption() {}; // refused by every file system, as O_DIRECT is by some
        try (DirectIo.Target t = DirectIo.createNew(dir.resolve("probe"))) {
            assertFalse(t.direct());
        }
        MemorySegment data = random(DATA, 3);
        Path file = dir.resolve("f");
        ParallelWriter.writeFile(file, HEAD, data, 1 << 20, WriteHooks.NONE);
        assertFileIs(file, data);
    }

    @Test
    void aRepositoryOnTmpfsStoresAndReadsBack() throws IOException {
        // tmpfs takes O_DIRECT from Linux 6.6 on and refuses it before: either way the store must work
        Path shm = Path.of("/dev/shm");
        assumeTrue(
                Files.isDirectory(shm)
                        && Files.isWritable(shm)
                        && "tmpfs".equals(Files.getFileStore(shm).type()),
                "no writable tmpfs at /dev/shm on this machine");
        Path tmp = Files.createTempDirectory(shm, "viper-pfs-test");
        try (PfsRepository repo = new PfsRepository(Files.createDirectory(tmp.resolve("repo")), 2);
                TestStagedCheckpoint v1 = new TestStagedCheckpoint("m", 1, 99, 5_000_001, 3)) {
            PfsRepositoryTestBase.store(repo, v1);
            Manifest m = repo.latest("m").orElseThrow();
            assertEquals(-1, v1.data().mismatch(PfsRepositoryTestBase.readBack(m)));
        } finally {
            DurableFiles.deleteTreeQuietly(tmp);
        }
    }

    @Test
    void aColdFileIsReadInParallelAndLandsInThePageCacheForTheNextReader() throws IOException {
        Path root = Files.createDirectory(dir.resolve("repo"));
        try (PfsRepository repo = new PfsRepository(root, 2);
                TestStagedCheckpoint v1 = new TestStagedCheckpoint("m", 1, 7, DATA)) {
            boolean direct;
            try (DirectIo.Target t = DirectIo.createNew(root.resolve("probe"))) {
                direct = t.direct();
            }
            assumeTrue(direct, "this file system takes no O_DIRECT: a file just written is in the page cache");
            PfsRepositoryTestBase.store(repo, v1);
            Manifest m = repo.latest("m").orElseThrow();
            Path file = PfsRepository.pathOf(m.locations().getFirst());
            assertFalse(PageCacheControl.hot(file), "written past the page cache");
            assertEquals(-1, v1.data().mismatch(PfsRepositoryTestBase.readBack(m)), "read in parallel");
            assertTrue(PageCacheControl.hot(file), "buffered reads: the next consumer finds it there");
        }
    }

    @Test
    void aColdFileIsBroughtIntoMemoryInParallelWhenItsMappingIsPopulated() throws IOException {
        Path root = Files.createDirectory(dir.resolve("repo"));
        try (PfsRepository repo = new PfsRepository(root, 2);
                TestStagedCheckpoint v1 = new TestStagedCheckpoint("m", 1, 8, DATA);
                FileTransportClient client = new FileTransportClient()) {
            boolean direct;
            try (DirectIo.Target t = DirectIo.createNew(root.resolve("probe"))) {
                direct = t.direct();
            }
            assumeTrue(direct, "this file system takes no O_DIRECT: a file just written is in the page cache");
            PfsRepositoryTestBase.store(repo, v1);
            Manifest m = repo.latest("m").orElseThrow();
            Path file = PfsRepository.pathOf(m.locations().getFirst());
            assertFalse(PageCacheControl.hot(file), "written past the page cache");
            try (TransportClient.MappedData mapped =
                    client.map(m, m.locations().getFirst()).orElseThrow()) {
                assertFalse(PageCacheControl.hot(file), "handed out cold: the consumer verifies as it comes in");
                mapped.populate(TransportClient.Arrivals.NONE);
                assertTrue(PageCacheControl.hot(file), "brought in by populate's parallel reads");
                assertEquals(-1, v1.data().mismatch(mapped.data()));
            }
        }
    }

    @Test
    void hooksHearEveryChunkInOrderAndAFailureStopsTheWrite() throws IOException {
        MemorySegment data = random(DATA, 4);
        List<Long> heard = new ArrayList<>();
        WriteHooks failAt = new WriteHooks() {
            @Override
            public void beforeChunk(Path file, long position) throws IOException {
                heard.add(position);
                if (position == 2L << 20) {
                    throw new FileSystemException(file.toString(), null, "No space left on device");
                }
            }
        };
        assertThrows(
                FileSystemException.class,
                () -> ParallelWriter.writeFile(dir.resolve("f"), HEAD, data, 1 << 20, failAt));
        assertEquals(List.of(0L, 1L << 20, 2L << 20), heard);
    }

    @Test
    void parallelReadsFillTheDestinationAndReportEveryByteOnce() throws IOException {
        MemorySegment data = random(DATA, 5);
        Path file = dir.resolve("f");
        ParallelWriter.writeFile(file, HEAD, data, 1 << 20, WriteHooks.NONE);
        MemorySegment into = arena.allocate(DATA);
        BitSet reported = new BitSet();
        long split = DirectIo.IO_CHUNK + 777;
        List<ByteRange> ranges = List.of(new ByteRange(split, DATA - split, split), new ByteRange(0, split, 0));
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ParallelReader.read(ch, file, HEAD.length, ranges, into, (at, length) -> {
                synchronized (reported) {
                    for (long i = at; i < at + length; i++) {
                        assertFalse(reported.get((int) i), "byte " + i + " reported twice");
                        reported.set((int) i);
                    }
                }
            });
        }
        assertEquals(DATA, reported.cardinality());
        assertEquals(-1, data.mismatch(into));
    }

    @Test
    void memoryConfinedToTheCallerIsWrittenAndReadOnItsThread() throws IOException {
        try (Arena confined = Arena.ofConfined()) {
            MemorySegment data = confined.allocate(DATA);
            data.copyFrom(random(DATA, 9));
            Path file = dir.resolve("f");
            ParallelWriter.writeFile(file, HEAD, data, 1 << 20, WriteHooks.NONE);
            assertFileIs(file, data);
            MemorySegment into = confined.allocate(DATA);
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
                ParallelReader.read(
                        ch, file, HEAD.length, List.of(new ByteRange(0, DATA, 0)), into, TransportClient.Arrivals.NONE);
            }
            assertEquals(-1, data.mismatch(into));
        }
    }

    @Test
    void residencyTellsAFileInThePageCacheFromOneWrittenPastIt() throws IOException {
        Path file = dir.resolve("f");
        boolean direct;
        try (DirectIo.Target t = DirectIo.createNew(dir.resolve("probe"))) {
            direct = t.direct();
        }
        ParallelWriter.writeFile(file, HEAD, random(DATA, 6), 1 << 20, WriteHooks.NONE);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
                Arena mapping = Arena.ofConfined()) {
            MemorySegment m = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), mapping);
            if (direct) {
                assertFalse(Residency.hot(m), "written with O_DIRECT: not in the page cache");
            }
            Files.readAllBytes(file);
            assertTrue(Residency.hot(m), "just read: in the page cache");
        }
    }

    private MemorySegment random(long size, long seed) {
        MemorySegment s = arena.allocate(size, 8);
        SplittableRandom rnd = new SplittableRandom(seed);
        for (long i = 0; i < size; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        return s;
    }

    private static void assertFileIs(Path file, MemorySegment data) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        assertEquals(HEAD.length + data.byteSize(), bytes.length);
        byte[] head = new byte[HEAD.length];
        System.arraycopy(bytes, 0, head, 0, HEAD.length);
        assertArrayEquals(HEAD, head);
        assertEquals(-1, MemorySegment.ofArray(bytes).asSlice(HEAD.length).mismatch(data));
    }
}
