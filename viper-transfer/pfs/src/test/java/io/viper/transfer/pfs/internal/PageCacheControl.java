package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/** Tests' hold on a file's pages in the page cache: drops them (no root needed) and asks {@link Residency}. */
final class PageCacheControl {
    private PageCacheControl() {}

    /** Drops the file's clean pages from the page cache: it is cold again. */
    static void evict(Path file) {
        evict(file, 0, 0);
    }

    /** Drops the clean pages of {@code length} bytes of {@code file} from {@code offset} (0: to its end). */
    static void evict(Path file, long offset, long length) {
        int fd = FileDescriptors.open(file, FileDescriptors.READ);
        assertTrue(fd >= 0, "open " + file);
        try {
            assertEquals(0, FileDescriptors.advise(fd, offset, length, FileDescriptors.POSIX_FADV_DONTNEED));
        } finally {
            FileDescriptors.close(fd);
        }
    }

    /** A new file of {@code bytes} zeros at {@code file}, synced and dropped from the page cache: cold. */
    static Path coldFile(Path file, int bytes) throws IOException {
        try (FileChannel out = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            out.write(ByteBuffer.wrap(new byte[bytes]));
            out.force(true); // clean pages: evict drops only those
        }
        evict(file);
        assertFalse(hot(file), "cold before");
        return file;
    }

    /**
     * Whether {@code file} is {@link #hot} within 20 s, asked every 10 ms (readahead runs after the advice returns).
     */
    static boolean becomesHot(Path file) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!hot(file) && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        return hot(file);
    }

    /** {@link Residency#hot} of the whole file, mapped for the question. */
    static boolean hot(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
                Arena mapping = Arena.ofConfined()) {
            return Residency.hot(ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), mapping));
        }
    }
}
