package io.viper.transfer.pfs.internal;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;

/**
 * Writes a version's safetensors file as {@link DirectIo#IO_CHUNK} pieces, {@link DirectIo#WRITES_IN_FLIGHT} at once
 * from the I/O threads, each at its place in the file: directly from aligned buffers where the file system takes
 * {@code O_DIRECT} (the last piece padded to the block size, the file truncated to its length after), straight from the
 * staged memory through the page cache where it does not; then one {@code fsync}. The test hooks' {@code beforeChunk}
 * is called on the caller's thread, in order, before the piece holding that position is started, so an injected failure
 * stops the write where it did when it ran in series. Static; each call is independent.
 */
final class ParallelWriter {
    private ParallelWriter() {}

    /**
     * Writes the new file {@code file}: {@code head}, then {@code data}, forced to the device.
     *
     * @param hookChunk the data positions (multiples of it) at which {@code hooks} hear of a chunk
     */
    static void writeFile(Path file, byte[] head, MemorySegment data, int hookChunk, WriteHooks hooks)
            throws IOException {
        long total = head.length + data.byteSize();
        try (DirectIo.Target target = DirectIo.createNew(file);
                Arena arena = Arena.ofShared();
                InFlight inFlight = new InFlight(DirectIo.WRITES_IN_FLIGHT, InFlight.parallelFor(data))) {
            if (target.direct()) {
                // pieces land in any order: reserve the file's extent first, so that it is laid out in one run
                SyncFs.preallocate(file, DirectIo.alignUp(total, target.alignment()));
            }
            BlockingQueue<MemorySegment> buffers = target.direct() ? buffers(arena, target.alignment()) : null;
            long hookAt = 0;
            for (long from = 0; from < total; from += DirectIo.IO_CHUNK) {
                long start = from;
                long end = Math.min(total, from + DirectIo.IO_CHUNK);
                while (hookAt < data.byteSize() && head.length + hookAt < end) {
                    hooks.beforeChunk(file, hookAt);
                    hookAt += hookChunk;
                }
                inFlight.submit(() -> writePiece(target, buffers, head, data, start, end));
            }
            inFlight.await();
            if (target.direct() && total % target.alignment() != 0) {
                target.channel().truncate(total);
            }
            target.channel().force(true);
        }
    }

    /** One aligned buffer per write in flight, in {@code arena}. */
    private static BlockingQueue<MemorySegment> buffers(Arena arena, int alignment) {
        BlockingQueue<MemorySegment> q = new ArrayBlockingQueue<>(DirectIo.WRITES_IN_FLIGHT);
        for (int i = 0; i < DirectIo.WRITES_IN_FLIGHT; i++) {
            q.add(arena.allocate(DirectIo.IO_CHUNK, alignment));
        }
        return q;
    }

    /** Writes file bytes [{@code from}, {@code end}) of {@code head} followed by {@code data}. */
    private static void writePiece(
            DirectIo.Target target,
            BlockingQueue<MemorySegment> buffers,
            byte[] head,
            MemorySegment data,
            long from,
            long end)
            throws IOException {
        long headPart = Math.max(0, Math.min(end, head.length) - from);
        long dataFrom = Math.max(from, head.length) - head.length;
        long dataPart = end - from - headPart;
        if (!target.direct()) {
            if (headPart > 0) {
                writeAt(target.channel(), ByteBuffer.wrap(head, (int) from, (int) headPart), from);
            }
            if (dataPart > 0) {
                writeAt(target.channel(), data.asSlice(dataFrom, dataPart).asByteBuffer(), from + headPart);
            }
            return;
        }
        MemorySegment buffer = take(buffers);
        try {
            if (headPart > 0) {
                MemorySegment.copy(MemorySegment.ofArray(head), from, buffer, 0, headPart);
            }
            if (dataPart > 0) {
                MemorySegment.copy(data, dataFrom, buffer, headPart, dataPart);
            }
            long length = end - from;
            long padded = DirectIo.alignUp(length, target.alignment());
            if (padded > length) {
                buffer.asSlice(length, padded - length).fill((byte) 0);
            }
            writeAt(target.channel(), buffer.asSlice(0, padded).asByteBuffer(), from);
        } finally {
            buffers.add(buffer);
        }
    }

    /**
     * Writes {@code bytes} as the whole content of the new file behind {@code target}, {@code bounce} (aligned, of at
     * least the target's alignment) carrying what is not aligned for a direct write. It does not sync the file: the
     * caller makes its files durable together ({@link BlockBatch#commit}: one {@code syncfs}, or an {@code fsync} per
     * file where that is missing). An {@code fsync} here, per block file, took 31 of the 70 samples of the block
     * writers' time in a profile of a 1 GiB flush (a journal commit per new file), and the commit synced them again.
     */
    static void writeWhole(DirectIo.Target target, MemorySegment bytes, MemorySegment bounce) throws IOException {
        FileChannel ch = target.channel();
        int alignment = target.alignment();
        long total = bytes.byteSize();
        if (!target.direct()) {
            writeAt(ch, bytes.asByteBuffer(), 0);
        } else if (bytes.address() % alignment == 0 && total % alignment == 0) {
            writeAt(ch, bytes.asByteBuffer(), 0); // aligned staging memory: no copy
        } else {
            for (long at = 0; at < total; at += bounce.byteSize()) {
                long length = Math.min(bounce.byteSize(), total - at);
                MemorySegment.copy(bytes, at, bounce, 0, length);
                long padded = DirectIo.alignUp(length, alignment);
                if (padded > length) {
                    bounce.asSlice(length, padded - length).fill((byte) 0);
                }
                writeAt(ch, bounce.asSlice(0, padded).asByteBuffer(), at);
            }
            if (total % alignment != 0) {
                ch.truncate(total);
            }
        }
    }

    private static void writeAt(FileChannel ch, ByteBuffer bytes, long position) throws IOException {
        long at = position;
        while (bytes.hasRemaining()) {
            at += ch.write(bytes, at);
        }
    }

    private static MemorySegment take(BlockingQueue<MemorySegment> buffers) {
        MemorySegment b = buffers.poll();
        if (b == null) {
            throw new IllegalStateException("more writes in flight than buffers"); // InFlight bounds them
        }
        return b;
    }
}
