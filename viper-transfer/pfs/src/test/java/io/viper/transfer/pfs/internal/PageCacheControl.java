package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/** Tests' hold on a file's pages in the page cache: drops them (no root needed) and asks {@link Residency}. */
final class PageCacheControl {
    private static final int POSIX_FADV_DONTNEED = 4;

    private PageCacheControl() {}

    /** Drops the file's clean pages from the page cache: it is cold again. */
    static void evict(Path file) throws Throwable {
        evict(file, 0, 0);
    }

    /** Drops the clean pages of {@code length} bytes of {@code file} from {@code offset} (0: to its end). */
    static void evict(Path file, long offset, long length) throws Throwable {
        Linker linker = Linker.nativeLinker();
        var lookup = linker.defaultLookup();
        MethodHandle open = linker.downcallHandle(
                lookup.findOrThrow("open"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT));
        MethodHandle fadvise = linker.downcallHandle(
                lookup.findOrThrow("posix_fadvise"),
                FunctionDescriptor.of(
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT));
        MethodHandle close = linker.downcallHandle(
                lookup.findOrThrow("close"), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) open.invokeExact(arena.allocateFrom(file.toString()), 0);
            assertTrue(fd >= 0, "open " + file);
            try {
                assertEquals(0, (int) fadvise.invokeExact(fd, offset, length, POSIX_FADV_DONTNEED));
            } finally {
                int rc = (int) close.invokeExact(fd);
                assertEquals(0, rc);
            }
        }
    }

    /** {@link Residency#hot} of the whole file, mapped for the question. */
    static boolean hot(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ);
                Arena mapping = Arena.ofConfined()) {
            return Residency.hot(ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), mapping));
        }
    }
}
