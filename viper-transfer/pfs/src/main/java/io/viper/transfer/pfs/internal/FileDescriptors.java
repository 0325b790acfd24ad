package io.viper.transfer.pfs.internal;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * {@code open(2)}, {@code close(2)} and {@code lseek(2)} through the FFM API, for the calls of the PFS code that take a
 * file descriptor, which Java's channels do not expose: {@code syncfs} and {@code posix_fallocate} ({@link SyncFs}),
 * {@code mmap} of block files ({@link MappedBlocks}), a mapped file opened again to read ahead of its mapping
 * ({@link Prefetch}). Linux only: elsewhere {@link #available()} is false and {@link #open} returns -1. Static and
 * thread-safe; the caller owns each descriptor it opened and closes it.
 */
final class FileDescriptors {
    /**
     * {@code O_RDONLY | O_CLOEXEC | O_NONBLOCK}, the same on Linux's x86-64 and aarch64: a FIFO planted in place of a
     * file opens at once (and then has no size), where a blocking open would wait for a writer forever.
     */
    static final int READ = 0x80800;
    /** {@code O_WRONLY | O_CLOEXEC | O_NONBLOCK}: a planted FIFO fails to open instead of waiting for a reader. */
    static final int WRITE = 0x80801;

    private static final System.Logger LOG = System.getLogger(PfsRepository.class.getName());
    private static final int SEEK_END = 2;
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle LSEEK;

    static {
        MethodHandle open = null;
        MethodHandle close = null;
        MethodHandle lseek = null;
        if ("Linux".equals(System.getProperty("os.name"))) {
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                open = linker.downcallHandle(
                        libc.findOrThrow("open"),
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
                        Linker.Option.firstVariadicArg(2));
                close = linker.downcallHandle(
                        libc.findOrThrow("close"), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
                lseek = linker.downcallHandle(
                        libc.findOrThrow("lseek"),
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_INT));
            } catch (RuntimeException | LinkageError e) {
                LOG.log(Level.DEBUG, "open, close or lseek is not available through FFM", e);
                open = null;
            }
        }
        OPEN = open;
        CLOSE = close;
        LSEEK = lseek;
    }

    private FileDescriptors() {}

    /** Whether {@link #open} can open files here. */
    static boolean available() {
        return OPEN != null;
    }

    /**
     * Opens {@code file} with {@code flags} ({@link #READ} or {@link #WRITE}); the descriptor, or -1 where it cannot be
     * opened (missing, refused, or not {@link #available()}).
     */
    static int open(Path file, int flags) {
        if (OPEN == null) {
            return -1;
        }
        try (Arena arena = Arena.ofConfined()) {
            return (int)
                    OPEN.invokeExact(arena.allocateFrom(file.toAbsolutePath().toString()), flags);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) { // invokeExact declares Throwable
            throw new IllegalStateException("open " + file, e);
        }
    }

    /** Closes {@code fd}; a failure loses nothing the callers wrote (they sync before), so it is ignored. */
    static void close(int fd) {
        try {
            int _ = (int) CLOSE.invokeExact(fd);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) { // invokeExact declares Throwable
            throw new IllegalStateException("close", e);
        }
    }

    /** The size of the file open as {@code fd}, by a seek to its end (one call, no path lookup); -1 if it failed. */
    static long size(int fd) {
        try {
            return (long) LSEEK.invokeExact(fd, 0L, SEEK_END);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) { // invokeExact declares Throwable
            throw new IllegalStateException("lseek", e);
        }
    }
}
