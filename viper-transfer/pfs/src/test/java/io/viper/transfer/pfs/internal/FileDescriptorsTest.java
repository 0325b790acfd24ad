package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.RetriableViperException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link FileDescriptors#readAhead} has the kernel read a cold file into the page cache with nothing reading it, and
 * takes a file that is not there as advice it cannot follow, not as a failure; {@link FileDescriptors#pread} reads a
 * file's bytes at an offset, 0 at its end and -1 where the read fails; {@link ParallelReader#readFully(int, Path,
 * MemorySegment, long)} turns a file that ends too soon into a retriable failure and a failed read into an
 * {@link IOException}.
 */
class FileDescriptorsTest {
    @TempDir
    Path dir;

    @Test
    void readingAheadBringsAColdFilesPagesInWithNothingReadingThem() throws Exception {
        Path file = PageCacheControl.coldFile(dir.resolve("block"), 4 << 20);
        FileDescriptors.readAhead(file, 0, 4 << 20); // returns before the reads end
        assertTrue(PageCacheControl.becomesHot(file), "the kernel read the file ahead into the page cache");
    }

    @Test
    void preadReadsAtAnOffsetAndSaysWhereTheFileEnds() throws Exception {
        byte[] bytes = new byte[10_000];
        new SplittableRandom(3).nextBytes(bytes);
        Path file = Files.write(dir.resolve("bytes"), bytes);
        int fd = FileDescriptors.open(file, FileDescriptors.READ);
        assertTrue(fd >= 0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment into = arena.allocate(4096);
            assertEquals(4096, FileDescriptors.pread(fd, into, 5000));
            assertEquals(-1, into.mismatch(MemorySegment.ofArray(bytes).asSlice(5000, 4096)));
            assertEquals(10_000 - 9000, FileDescriptors.pread(fd, into, 9000), "a short read at the end");
            assertEquals(0, FileDescriptors.pread(fd, into, 10_000), "nothing past the end");
            assertEquals(0, FileDescriptors.advise(fd, 0, 0, FileDescriptors.POSIX_FADV_SEQUENTIAL));

            ParallelReader.readFully(fd, file, into.asSlice(0, 1000), 9000); // exactly to the end
            RetriableViperException shorter = assertThrows(
                    RetriableViperException.class,
                    () -> ParallelReader.readFully(fd, file, into.asSlice(0, 1001), 9000));
            assertTrue(
                    shorter.getMessage().contains(file + ": the file changed (was truncated) while it was read"),
                    shorter.getMessage());
        } finally {
            FileDescriptors.close(fd);
        }
    }

    @Test
    void aReadThatFailsIsAnIoException() throws Exception {
        int fd = FileDescriptors.open(dir, FileDescriptors.READ); // a directory opens, and reading it fails (EISDIR)
        assertTrue(fd >= 0);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment into = arena.allocate(4096);
            assertEquals(-1, FileDescriptors.pread(fd, into, 0));
            IOException e = assertThrows(IOException.class, () -> ParallelReader.readFully(fd, dir, into, 0));
            assertTrue(e.getMessage().contains(dir + ": read failed at 0"), e.getMessage());
        } finally {
            FileDescriptors.close(fd);
        }
    }

    @Test
    void aFileThatIsNotThereIsLeftForTheReadToFind() {
        // advice only: the read that follows reports the missing block (NOT_FOUND)
        assertDoesNotThrow(() -> FileDescriptors.readAhead(dir.resolve("missing"), 0, 1 << 20));
    }
}
