package io.viper.cli.bench;

import java.io.IOException;
import java.lang.foreign.Arena;
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
 * eighth of the file and each with a channel of its own (the kernel's readahead state is per open file); no mapping, no
 * verification. On a virtual machine whose guest returns free memory to its host, the page-cache pages it fills must be
 * backed by the host again, which the disk's direct read into one reused buffer never meets. Static; one call at a
 * time.
 */
final class PageCacheFill {
    /** Streams, as many as Viper's mapped loads use ({@code Prefetch.STREAMS} in viper-transfer-pfs). */
    static final int STREAMS = 16;

    private static final int PIECE = 4 << 20;

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

    /** Reads {@code [from, to)} of {@code file} in order on its own channel; the bytes read. */
    private static long read(Path file, long from, long to) throws IOException {
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
}
