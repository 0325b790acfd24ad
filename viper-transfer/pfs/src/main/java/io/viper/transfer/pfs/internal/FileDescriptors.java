package io.viper.transfer.pfs.internal;

import java.lang.System.Logger.Level;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * {@code open(2)}, {@code close(2)}, {@code lseek(2)}, {@code pread(2)} and {@code posix_fadvise(2)} through the FFM
 * API, for the calls of the PFS code that take a file descriptor, which Java's channels do not expose: {@code syncfs}
 * and {@code posix_fallocate} ({@link SyncFs}), {@code mmap} of block files ({@link MappedBlocks}), a mapped file
 * opened again and read in order to bring it in ({@link Prefetch}), block files read ahead ({@link BlockReader}), a
 * directory's flags ({@link TopDirectory}). Linux only: elsewhere {@link #available()} is false and {@link #open}
 * returns -1. Static and thread-safe; the caller owns each descriptor it opened and closes it.
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
    /** {@code posix_fadvise}'s advice: read ahead. */
    static final int POSIX_FADV_WILLNEED = 3;
    /** {@code posix_fadvise}'s advice: read in order (the kernel reads twice as far ahead on this open file). */
    static final int POSIX_FADV_SEQUENTIAL = 2;
    /** {@code posix_fadvise}'s advice: drop the clean pages (tests make a file cold with it). */
    static final int POSIX_FADV_DONTNEED = 4;

    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle LSEEK;
    private static final MethodHandle PREAD;
    /** {@code posix_fadvise}; null where it is missing (advice: nothing else depends on it). */
    private static final MethodHandle FADVISE;

    static {
        MethodHandle open = null;
        MethodHandle close = null;
        MethodHandle lseek = null;
        MethodHandle pread = null;
        MethodHandle fadvise = null;
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
                pread = linker.downcallHandle(
                        libc.findOrThrow("pread"),
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS,
                                ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_LONG));
                fadvise = optional(
                        "posix_fadvise",
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_LONG,
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
        PREAD = pread;
        FADVISE = open == null ? null : fadvise;
    }

    private FileDescriptors() {}

    /**
     * The C library's function {@code name} as a downcall of {@code descriptor} with {@code options} (a variadic
     * function's {@link Linker.Option#firstVariadicArg}), or null where the library lacks it (the caller then does
     * without).
     *
     * @throws LinkageError or a {@link RuntimeException} where the downcall cannot be made (the callers' static
     *     initialisers catch both)
     */
    static MethodHandle optional(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        Linker linker = Linker.nativeLinker();
        return linker.defaultLookup()
                .find(name)
                .map(f -> linker.downcallHandle(f, descriptor, options))
                .orElse(null);
    }

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

    /**
     * Has the kernel start reading {@code length} bytes of {@code file} from {@code offset} into the page cache and
     * returns without waiting ({@code posix_fadvise(POSIX_FADV_WILLNEED)}; the reads go on after the descriptor is
     * closed). Advice: a file that cannot be opened, or a call refused, is left for the read that follows to find.
     */
    static void readAhead(Path file, long offset, long length) {
        int fd = FADVISE == null ? -1 : open(file, READ);
        if (fd < 0) {
            return;
        }
        try {
            int _ = advise(fd, offset, length, POSIX_FADV_WILLNEED);
        } finally {
            close(fd);
        }
    }

    /**
     * {@code posix_fadvise(fd, offset, length, advice)}: 0, or the error number; {@code ENOSYS} (38) where the call is
     * missing.
     */
    static int advise(int fd, long offset, long length, int advice) {
        if (FADVISE == null) {
            return 38;
        }
        try {
            return (int) FADVISE.invokeExact(fd, offset, length, advice);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) { // invokeExact declares Throwable
            throw new IllegalStateException("posix_fadvise", e);
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

    /**
     * Reads up to {@code into.byteSize()} bytes of the file open as {@code fd} from {@code offset} into {@code into}:
     * how many it read, 0 at the file's end, -1 when the read failed.
     */
    static long pread(int fd, MemorySegment into, long offset) {
        try {
            return (long) PREAD.invokeExact(fd, into, into.byteSize(), offset);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) { // invokeExact declares Throwable
            throw new IllegalStateException("pread", e);
        }
    }
}
