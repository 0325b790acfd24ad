package io.viper.cli.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * A third bound of a cold load, beside the disk's direct read and the first touch of fresh memory: the kernel bringing
 * a file into its page cache on its own, the work a load that shares the page cache (a mapped one) cannot skip. Plain
 * buffered reads of 4 MiB into one reused buffer per stream, in {@link #STREAMS} sequential streams each over its own
 * sixteenth of the file and each on an open file of its own (the kernel's readahead state is per open file), advised as
 * sequential ({@code POSIX_FADV_SEQUENTIAL}, which doubles the readahead window), as Viper's mapped loads read
 * ({@code Prefetch} in viper-transfer-pfs); no mapping, no verification. Without the advice the fill was slower than
 * Viper's own load, so no floor of it. Where {@code open(2)} or {@code posix_fadvise(2)} cannot be called through FFM
 * (not Linux), the streams read through channels, unadvised. On a virtual machine whose guest returns free memory to
 * its host, the page-cache pages it fills must be backed by the host again, which the disk's direct read into one
 * reused buffer never meets. Static; one call at a time.
 */
final class PageCacheFill {
    /** Streams, as many as Viper's mapped loads use ({@code Prefetch.STREAMS} in viper-transfer-pfs). */
    static final int STREAMS = 16;

    private static final int PIECE = 4 << 20;
    /** {@code O_RDONLY | O_CLOEXEC}, the same on Linux's x86-64 and aarch64. */
    private static final int O_RDONLY_CLOEXEC = 0x80000;
    /** {@code posix_fadvise}'s advice: read in order (the kernel reads twice as far ahead on this open file). */
    private static final int POSIX_FADV_SEQUENTIAL = 2;

    /** {@code open}, {@code pread}, {@code posix_fadvise}, {@code close}; all null where any cannot be had. */
    private static final MethodHandle OPEN;

    private static final MethodHandle PREAD;
    private static final MethodHandle FADVISE;
    private static final MethodHandle CLOSE;

    static {
        MethodHandle open = null;
        MethodHandle pread = null;
        MethodHandle fadvise = null;
        MethodHandle close = null;
        if ("Linux".equals(System.getProperty("os.name"))) {
            try {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                ValueLayout.OfInt i = ValueLayout.JAVA_INT;
                ValueLayout.OfLong l = ValueLayout.JAVA_LONG;
                open = linker.downcallHandle(
                        libc.findOrThrow("open"),
                        FunctionDescriptor.of(i, ValueLayout.ADDRESS, i),
                        Linker.Option.firstVariadicArg(2));
                pread = linker.downcallHandle(
                        libc.findOrThrow("pread"), FunctionDescriptor.of(l, i, ValueLayout.ADDRESS, l, l));
                fadvise =
                        linker.downcallHandle(libc.findOrThrow("posix_fadvise"), FunctionDescriptor.of(i, i, l, l, i));
                close = linker.downcallHandle(libc.findOrThrow("close"), FunctionDescriptor.of(i, i));
            } catch (RuntimeException | LinkageError e) {
                open = null; // the channels' unadvised reads stand in
            }
        }
        OPEN = open;
        PREAD = open == null ? null : pread;
        FADVISE = open == null ? null : fadvise;
        CLOSE = open == null ? null : close;
    }

    private PageCacheFill() {}

    /** Reads all of {@code file} through the page cache as above; returns the bytes read (the file's size). */
    static long fill(Path file) throws IOException {
        long size;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            size = ch.size();
        }
        long part = Math.max(PIECE, ((size + STREAMS - 1) / STREAMS + PIECE - 1) / PIECE * PIECE);
        ExecutorService threads = Executors.newFixedThreadPool(STREAMS);
        try {
            List<Future<Long>> streams = new ArrayList<>();
            for (long lo = 0; lo < size; lo += part) {
                long from = lo;
                long to = Math.min(size, lo + part);
                streams.add(threads.submit(() -> read(file, from, to)));
            }
            long read = 0;
            for (Future<Long> s : streams) {
                read += s.get();
            }
            return read;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while reading " + file, e);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
        } finally {
            threads.shutdownNow();
        }
    }

    /** Seconds for {@link #fill} of {@code file}. */
    static double fillS(Path file) throws IOException {
        long t0 = System.nanoTime();
        fill(file);
        return PfsBench.seconds(t0);
    }

    /**
     * Reads {@code [from, to)} of {@code file} in order on an open file of its own, advised as sequential where FFM
     * reaches the C library (else on a channel); the bytes read.
     */
    private static long read(Path file, long from, long to) throws IOException {
        if (OPEN != null) {
            return readAdvised(file, from, to);
        }
        try (Arena arena = Arena.ofConfined();
                FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buffer = arena.allocate(PIECE).asByteBuffer();
            long at = from;
            while (at < to) {
                buffer.clear().limit((int) Math.min(PIECE, to - at));
                int n = ch.read(buffer, at);
                if (n < 0) {
                    break; // truncated meanwhile: what was there is read
                }
                at += n;
            }
            return at - from;
        }
    }

    private static long readAdvised(Path file, long from, long to) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) OPEN.invokeExact(arena.allocateFrom(file.toString()), O_RDONLY_CLOEXEC);
            if (fd < 0) {
                throw new IOException(file + ": cannot open to read it into the page cache");
            }
            try {
                int _ = (int) FADVISE.invokeExact(fd, from, to - from, POSIX_FADV_SEQUENTIAL); // advice only
                MemorySegment buffer = arena.allocate(PIECE);
                long at = from;
                while (at < to) {
                    long n = (long) PREAD.invokeExact(fd, buffer, Math.min(PIECE, to - at), at);
                    if (n < 0) {
                        throw new IOException(file + ": read failed at byte " + at);
                    }
                    if (n == 0) {
                        break; // truncated meanwhile: what was there is read
                    }
                    at += n;
                }
                return at - from;
            } finally {
                int _ = (int) CLOSE.invokeExact(fd);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) { // invokeExact declares Throwable
            throw new IOException(file + ": " + e, e);
        }
    }
}
