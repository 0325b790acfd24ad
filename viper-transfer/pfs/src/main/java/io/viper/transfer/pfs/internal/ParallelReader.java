package io.viper.transfer.pfs.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.List;

/**
 * Reads ranges of a cold file with positional reads of up to {@link DirectIo#IO_CHUNK} (cut at multiples of it in the
 * file), {@link DirectIo#READS_IN_FLIGHT} at once from the I/O threads, straight into the caller's buffer, and reports
 * each piece to the caller's {@link TransportClient.Arrivals} as it lands (on the I/O thread that read it, one such
 * call at a time), so that it is verified while the rest is read. The reads go through the page cache: consumers on one
 * node loading the same version at once share what the first brought in (the kernel reads a page once and the others
 * wait for it) instead of each reading the disk. Static; each call is independent.
 */
final class ParallelReader {
    private ParallelReader() {}

    /**
     * Reads {@code ranges} of the data section, which starts {@code dataStart} bytes into the file open as {@code ch},
     * into {@code destination}.
     *
     * @throws IOException when a read fails
     * @throws RetriableViperException when the file is shorter than the ranges (it was truncated meanwhile)
     */
    static void read(
            FileChannel ch,
            Path file,
            long dataStart,
            List<ByteRange> ranges,
            MemorySegment destination,
            TransportClient.Arrivals arrivals)
            throws IOException {
        TransportClient.Arrivals serial = serialized(arrivals);
        try (InFlight inFlight = new InFlight(DirectIo.READS_IN_FLIGHT, InFlight.parallelFor(destination))) {
            for (ByteRange r : ranges) {
                long done = 0;
                while (done < r.length()) {
                    long position = dataStart + r.sourceOffset() + done;
                    long boundary = (position / DirectIo.IO_CHUNK + 1) * DirectIo.IO_CHUNK;
                    long length = Math.min(r.length() - done, boundary - position);
                    long at = r.destinationOffset() + done;
                    MemorySegment into = destination.asSlice(at, length);
                    inFlight.submit(() -> {
                        readFully(ch, file, into, position);
                        serial.arrived(at, length);
                    });
                    done += length;
                }
            }
            inFlight.await();
        }
    }

    /**
     * {@code arrivals}, called by one I/O thread at a time: the contract promises a caller the reading thread or a
     * thread of the transport's own, not several at once.
     */
    static TransportClient.Arrivals serialized(TransportClient.Arrivals arrivals) {
        Object lock = new Object();
        return (at, length) -> {
            synchronized (lock) {
                arrivals.arrived(at, length);
            }
        };
    }

    /** Reads {@code into.byteSize()} bytes of {@code ch} from {@code position}. */
    static void readFully(FileChannel ch, Path file, MemorySegment into, long position) throws IOException {
        ByteBuffer buf = into.asByteBuffer();
        long pos = position;
        while (buf.hasRemaining()) {
            int n = ch.read(buf, pos);
            if (n < 0) {
                throw truncated(file, pos);
            }
            pos += n;
        }
    }

    /**
     * Reads {@code into.byteSize()} bytes of {@code file}, open as {@code fd} ({@link FileDescriptors}), from
     * {@code position}.
     *
     * @throws IOException when a read fails
     * @throws RetriableViperException when the file ends before (it was truncated meanwhile)
     */
    static void readFully(int fd, Path file, MemorySegment into, long position) throws IOException {
        long done = 0;
        while (done < into.byteSize()) {
            long n = FileDescriptors.pread(fd, into.asSlice(done), position + done);
            if (n < 0) {
                throw new IOException(file + ": read failed at " + (position + done));
            }
            if (n == 0) {
                throw truncated(file, position + done);
            }
            done += n;
        }
    }

    /** {@code file} ended at {@code end}, before the bytes asked for: a later read may find it whole again. */
    private static RetriableViperException truncated(Path file, long end) {
        return new RetriableViperException(
                ViperException.Reason.TRANSFER,
                file + ": the file changed (was truncated) while it was read: it ends at " + end);
    }
}
