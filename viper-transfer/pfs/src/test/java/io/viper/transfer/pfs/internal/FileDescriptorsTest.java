package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link FileDescriptors#readAhead} has the kernel read a cold file into the page cache with nothing reading it, and
 * takes a file that is not there as advice it cannot follow, not as a failure.
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
    void aFileThatIsNotThereIsLeftForTheReadToFind() {
        // advice only: the read that follows reports the missing block (NOT_FOUND)
        assertDoesNotThrow(() -> FileDescriptors.readAhead(dir.resolve("missing"), 0, 1 << 20));
    }
}
