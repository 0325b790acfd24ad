package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.RetriableViperException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Prefetch#populate} of a file large enough for all its streams: every byte reported once, each stream's pieces
 * in file order one after another (the readahead grows on them), and the mapping then holds the file's bytes; a file
 * deleted by name while it is mapped is still brought in whole (through the mapping), and a FIFO planted under its name
 * is not opened in a way that waits for a writer; {@link Prefetch#readAhead} of a cold mapping has the kernel read its
 * pages in with nothing touching them.
 */
class PrefetchTest {
    @TempDir
    Path dir;

    private record Piece(String thread, long from, long length) {}

    @Test
    void touchingAFileTruncatedUnderneathIsARetriableFailureNotACrash() throws Exception {
        Path file = dir.resolve("short.bin");
        Files.write(file, new byte[1 << 20]);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
                Arena arena = Arena.ofShared()) {
            MemorySegment mapping = ch.map(FileChannel.MapMode.READ_ONLY, 0, 1 << 20, arena);
            Prefetch.touch(mapping, file.toString()); // whole: every page reads
            ch.truncate(4096);
            RetriableViperException e =
                    assertThrows(RetriableViperException.class, () -> Prefetch.touch(mapping, file.toString()));
            assertTrue(e.getMessage().contains(file + ": the file changed (was truncated)"), e.getMessage());
        }
    }

    @Test
    void streamsReportEveryByteOnceEachInFileOrder() throws Exception {
        // 150 MiB and 3 bytes: a stream per 16 MiB at most (9), each over a ninth rounded up to whole pieces (20 MiB),
        // so 8 streams of 20 MiB, the last one short and ending mid-piece
        long size = (150L << 20) + 3;
        Path file = dir.resolve("model.bin");
        byte[] chunk = new byte[1 << 20];
        SplittableRandom rnd = new SplittableRandom(7);
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (long at = 0; at < size; at += chunk.length) {
                for (int i = 0; i < chunk.length; i++) {
                    chunk[i] = (byte) rnd.nextInt();
                }
                out.write(ByteBuffer.wrap(chunk, 0, (int) Math.min(chunk.length, size - at)), at);
            }
        }
        List<Piece> pieces = new ArrayList<>();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
                Arena arena = Arena.ofShared()) {
            MemorySegment mapping = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            Prefetch.populate(mapping, file, (from, length) -> {
                synchronized (pieces) {
                    pieces.add(new Piece(Thread.currentThread().getName(), from, length));
                }
            });
            byte[] expected = Files.readAllBytes(file);
            assertEquals(-1, MemorySegment.ofArray(expected).mismatch(mapping));
        }

        List<Piece> sorted = new ArrayList<>(pieces);
        sorted.sort(Comparator.comparingLong(Piece::from));
        long next = 0;
        for (Piece p : sorted) {
            assertEquals(next, p.from(), "pieces meet end to end");
            assertTrue(p.length() > 0 && p.length() <= DirectIo.IO_CHUNK, "a piece of at most 4 MiB: " + p);
            next += p.length();
        }
        assertEquals(size, next, "every byte reported once");

        // each part (20 MiB) is read by one stream, its pieces one after another
        long part = 20L << 20;
        Map<Long, String> reader = new HashMap<>();
        Map<Long, Long> lastEnd = new HashMap<>();
        for (Piece p : pieces) {
            long partStart = p.from() / part * part;
            String first = reader.putIfAbsent(partStart, p.thread());
            assertEquals(first == null ? p.thread() : first, p.thread(), "one stream reads part " + partStart);
            Long end = lastEnd.put(partStart, p.from() + p.length());
            assertEquals(end == null ? partStart : end, p.from(), "part " + partStart + " is read in order");
        }
        assertEquals(8, reader.size(), "parts: " + reader.keySet());
        assertTrue(reader.size() <= Prefetch.STREAMS);
    }

    @Test
    void aFileWhoseNameIsGoneIsStillBroughtInThroughItsMapping() throws Exception {
        // retention, between the mapping and the reads: the streams cannot reopen it
        List<long[]> pieces = populateAfter("deleted.bin", Files::delete);
        assertEquals(11, pieces.size(), "in pieces of at most 4 MiB");
    }

    @Test
    void aFifoPlantedUnderTheFilesNameIsNotWaitedOn() throws Exception {
        // a blocking open of the FIFO would wait for a writer that never comes
        populateAfter("swapped.bin", file -> {
            Files.delete(file);
            Process mkfifo =
                    new ProcessBuilder("mkfifo", file.toString()).inheritIO().start();
            assertEquals(0, mkfifo.waitFor(), "mkfifo");
        });
    }

    @Test
    void readingAheadBringsAColdMappingsPagesInWithoutATouch() throws Exception {
        Path file = PageCacheControl.coldFile(dir.resolve("ahead.bin"), 8 << 20);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
                Arena arena = Arena.ofShared()) {
            MemorySegment mapping = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
            Prefetch.readAhead(mapping); // returns before the reads end; nothing here touches the mapping
            assertTrue(PageCacheControl.becomesHot(file), "the kernel read the file ahead into the page cache");
        }
    }

    /** What happens to a mapped file's name before it is populated. */
    private interface NameChange {
        void apply(Path file) throws Exception;
    }

    /**
     * Maps a file of 40 MiB and 5 random bytes, applies {@code change} to its name, populates the mapping (within 30 s)
     * and checks that it holds the file's bytes and that every byte was reported; the pieces reported.
     */
    private List<long[]> populateAfter(String name, NameChange change) throws Exception {
        long size = (40L << 20) + 5;
        byte[] bytes = new byte[(int) size];
        new SplittableRandom(11).nextBytes(bytes);
        Path file = Files.write(dir.resolve(name), bytes);
        List<long[]> pieces = new ArrayList<>();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
                Arena arena = Arena.ofShared()) {
            MemorySegment mapping = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            change.apply(file);
            assertTimeoutPreemptively(
                    Duration.ofSeconds(30),
                    () -> Prefetch.populate(mapping, file, (from, length) -> {
                        synchronized (pieces) {
                            pieces.add(new long[] {from, length});
                        }
                    }));
            assertEquals(-1, MemorySegment.ofArray(bytes).mismatch(mapping), "the mapping's own bytes");
        }
        assertEquals(size, pieces.stream().mapToLong(p -> p[1]).sum(), "every byte reported");
        return pieces;
    }
}
