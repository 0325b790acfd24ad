package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Residency#hot}: a file counts as hot from {@link Residency#HOT} of its pages in the page cache, wherever the
 * pages it lacks lie (in the first probe, which decides early, or in the last, shorter one).
 */
class ResidencyTest {
    /** Two and a half probes, and a page count that is no multiple of 8: the last probe is short and ragged. */
    private static final long PAGES = 2L * Residency.PROBE_PAGES + Residency.PROBE_PAGES / 2 + 3;

    private static final long SIZE = PAGES * Residency.PAGE - 1000;

    @TempDir
    Path dir;

    @Test
    void aFileIsHotFromNineTenthsOfItsPagesInThePageCacheWhereverTheOthersLie() throws Throwable {
        Path file = written();
        long tenth = PAGES / 10 * Residency.PAGE;

        assertTrue(PageCacheControl.hot(file), "all of it read");

        PageCacheControl.evict(file);
        assertFalse(PageCacheControl.hot(file), "none of it in the page cache");

        readAll(file);
        PageCacheControl.evict(file, SIZE - tenth / 2, 0);
        assertTrue(PageCacheControl.hot(file), "all but its last twentieth");

        readAll(file);
        PageCacheControl.evict(file, SIZE - tenth - tenth / 2, 0);
        assertFalse(PageCacheControl.hot(file), "its last 15% missing, found by the last probe");

        readAll(file);
        PageCacheControl.evict(file, 0, tenth + tenth / 2);
        assertFalse(PageCacheControl.hot(file), "its first 15% missing, found by the first probe");

        readAll(file);
        PageCacheControl.evict(file, Residency.PROBE_PAGES * Residency.PAGE, tenth / 2);
        assertTrue(PageCacheControl.hot(file), "a twentieth missing from the second probe");
    }

    @Test
    void anEmptyFileIsNeverHot() throws IOException {
        Path file = Files.createFile(dir.resolve("empty"));
        assertFalse(PageCacheControl.hot(file));
    }

    /** {@link #SIZE} random bytes, synced (only clean pages can be dropped) and read: all in the page cache. */
    private Path written() throws IOException {
        Path file = dir.resolve("f");
        byte[] bytes = new byte[(int) SIZE];
        new SplittableRandom(5).nextBytes(bytes);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            ch.force(true);
        }
        readAll(file);
        return file;
    }

    private static void readAll(Path file) throws IOException {
        byte[] _ = Files.readAllBytes(file);
    }
}
