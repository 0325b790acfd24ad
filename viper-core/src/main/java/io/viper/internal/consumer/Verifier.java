package io.viper.internal.consumer;

import io.viper.errors.ViperCorruptDataException;
import io.viper.hash.ContentHash;
import io.viper.hash.Crc32c;
import io.viper.hash.HashAlgorithm;
import io.viper.hash.ParallelHash64;
import io.viper.hash.Xxh3;
import io.viper.internal.CopyHelpers;
import io.viper.internal.TensorHashes;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.spi.TransportClient;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.zip.CRC32C;

/**
 * Checks the bytes a consumer received against the manifest before they may be served: each tensor's hash by the
 * algorithm the manifest names (CRC32C, or XXH3-128 in format 1 manifests), computed on the runtime's hash pool in
 * pieces while the rest of the model is still arriving (see {@link #overlapped}), or for a model in GPU memory the
 * manifest's phash64 computed on the device. The first mismatch throws {@link ViperCorruptDataException} naming the
 * model, version, location and tensor.
 *
 * <p>Called by the fetch thread, and by the caller of {@code ViperConsumer.fetch}; it only reads the memory it is
 * given, which the caller owns. Thread-safe (no state but the pool).
 */
final class Verifier {
    /** A model on the GPU without phash64 is copied to the host for hashing in pieces of this size. */
    private static final long HOST_CHUNK = 64L << 20;

    private final String model;
    private final ExecutorService hashPool;
    private final int workers;
    /** The pool's threads that copy beside the reading thread in {@link Overlapped#copy}. */
    private final CopyHelpers copyHelpers;

    /** @param workers pool threads that hash one model at once */
    Verifier(String model, ExecutorService hashPool, int workers) {
        this.model = model;
        this.hashPool = hashPool;
        this.workers = workers;
        this.copyHelpers = new CopyHelpers(hashPool, workers, 2 * TensorHashes.PIECE, TensorHashes.PIECE);
    }

    /**
     * Starts checking a model that arrives in pieces into {@code data} (its data section): each range
     * {@link Overlapped#arrived reported} is hashed on the pool at once, so that hashing overlaps the transfer of the
     * rest.
     */
    Overlapped overlapped(Manifest m, Location loc, MemorySegment data) {
        return overlapped(m, loc, data, null);
    }

    /**
     * As {@link #overlapped(Manifest, Location, MemorySegment)}, with the piece hashes ({@link Overlapped#pieces()}) of
     * an earlier version laid out as {@code m} with the same hash algorithms ({@link #samePieces}), which the pieces
     * reported {@link Overlapped#known} take.
     *
     * @param before those hashes, or null: every piece is hashed
     */
    Overlapped overlapped(Manifest m, Location loc, MemorySegment data, ContentHash[] before) {
        return new Overlapped(
                m, loc, m.tensors(), m.tensors().stream().map(TensorEntry::info).toList(), data, before);
    }

    /**
     * Whether {@code a} and {@code b} lay their tensors out alike with the same hash algorithms, so that their pieces
     * are the same byte ranges.
     */
    static boolean samePieces(Manifest a, Manifest b) {
        if (a.tensors().size() != b.tensors().size()) {
            return false;
        }
        for (int i = 0; i < a.tensors().size(); i++) {
            TensorEntry x = a.tensors().get(i);
            TensorEntry y = b.tensors().get(i);
            if (!x.info().equals(y.info()) || x.hash().algorithm() != y.hash().algorithm()) {
                return false;
            }
        }
        return true;
    }

    /**
     * As {@link #overlapped(Manifest, Location, MemorySegment)}, for some of {@code m}'s tensors laid out in
     * {@code data} otherwise than in the version (the tensors {@code ViperConsumer.fetch} asked for, back to back).
     *
     * @param entries the tensors, in the order of {@code offsets}
     * @param offsets where each tensor starts in {@code data}: contiguous and increasing
     */
    Overlapped overlapped(Manifest m, Location loc, List<TensorEntry> entries, List<Long> offsets, MemorySegment data) {
        List<TensorInfo> layout = new ArrayList<>(entries.size());
        for (int i = 0; i < entries.size(); i++) {
            layout.add(entries.get(i).info().withOffset(offsets.get(i)));
        }
        return new Overlapped(m, loc, entries, layout, data, null);
    }

    /** Checks one tensor's bytes on the calling thread. */
    void verify(Manifest m, Location loc, TensorEntry e, MemorySegment bytes) {
        check(m, loc, e, e.hash().algorithm().hash(bytes));
    }

    /**
     * Checks a model in GPU memory ({@code buf} holds its data section): the manifest's phash64 computed on the device
     * where the producer gave it (8 result bytes cross to the host), else the manifest's hash over the bytes streamed
     * to the host in 64 MiB chunks.
     */
    void verifyOnDevice(Manifest m, Location loc, GpuProvider gpu, int device, DeviceBuffer buf) {
        MemorySegment chunk = null;
        try (Arena arena = Arena.ofConfined()) {
            for (TensorEntry e : m.tensors()) {
                long off = e.info().offset();
                long len = e.info().length();
                if (e.phash64().isPresent()) {
                    long got = gpu.hash64(device, buf.pointer(off, len), len);
                    if (got != e.phash64().getAsLong()) {
                        throw corrupt(
                                m,
                                loc,
                                e,
                                "phash64 " + ParallelHash64.toHex(got) + " does not match the manifest's "
                                        + ParallelHash64.toHex(e.phash64().getAsLong()));
                    }
                    continue;
                }
                if (chunk == null) {
                    chunk = arena.allocate(HOST_CHUNK, 4096);
                }
                check(m, loc, e, hashOnHost(e.hash().algorithm(), gpu, device, buf.pointer(off, len), len, chunk));
            }
        }
    }

    /** The hash of {@code len} bytes of GPU memory at {@code ptr}, streamed through {@code chunk} on the host. */
    private static ContentHash hashOnHost(
            HashAlgorithm a, GpuProvider gpu, int device, long ptr, long len, MemorySegment chunk) {
        Xxh3.Hasher xxh3 = a == HashAlgorithm.XXH3_128 ? new Xxh3.Hasher() : null;
        CRC32C crc = new CRC32C();
        for (long done = 0; done < len; done += chunk.byteSize()) {
            long n = Math.min(chunk.byteSize(), len - done);
            MemorySegment part = chunk.asSlice(0, n);
            gpu.copyToHost(device, ptr + done, part);
            if (xxh3 != null) {
                xxh3.update(part);
            } else {
                Crc32c.update(crc, part);
            }
        }
        return xxh3 != null ? xxh3.digest() : ContentHash.crc32c((int) crc.getValue());
    }

    private void check(Manifest m, Location loc, TensorEntry e, ContentHash got) {
        if (!e.hash().equals(got)) {
            throw corrupt(
                    m,
                    loc,
                    e,
                    "hash " + got.toHex() + " (" + got.algorithm().fieldName() + ") does not match the manifest's "
                            + e.hash().toHex());
        }
    }

    private ViperCorruptDataException corrupt(Manifest m, Location loc, TensorEntry e, String problem) {
        return new ViperCorruptDataException(
                model + " v" + m.version() + " from " + loc.uri() + ": tensor '" + e.name() + "' " + problem);
    }

    /**
     * The check of one model arriving in pieces. {@link #arrived} may be called from any thread (a transport's
     * completion thread); {@link #verify()} and {@link #close()} by the owner. {@link #close()} waits for every hashing
     * task still running, so that the caller may reuse the buffer after a failure.
     */
    final class Overlapped implements AutoCloseable, TransportClient.Arrivals {
        private final Manifest manifest;
        private final Location location;
        private final List<TensorEntry> entries;
        private final TensorHashes hashes;

        private Overlapped(
                Manifest manifest,
                Location location,
                List<TensorEntry> entries,
                List<TensorInfo> layout,
                MemorySegment data,
                ContentHash[] before) {
            this.manifest = manifest;
            this.location = location;
            this.entries = entries;
            List<HashAlgorithm> algorithms =
                    entries.stream().map(e -> e.hash().algorithm()).toList();
            this.hashes = new TensorHashes(layout, algorithms, data, hashPool, workers, before);
        }

        /** Bytes {@code [offset, offset + length)} of the data section are in: starts hashing what they complete. */
        @Override
        public void arrived(long offset, long length) {
            hashes.arrived(offset, length);
        }

        /**
         * Bytes {@code [offset, offset + length)} of the data section are in and equal to those of the earlier version
         * whose piece hashes this check was given: a piece made only of such bytes takes its earlier hash instead of
         * being read. Without earlier hashes, as {@link #arrived}.
         */
        void known(long offset, long length) {
            hashes.known(offset, length);
        }

        /**
         * Copies {@code source} to {@code destination} ({@code destinationOffset} bytes into the data section) and
         * checks it in the same pass: the copy is cut at hash pieces into units of at least {@link TensorHashes#PIECE},
         * which this thread and up to {@code workers} threads of the pool take in turn, each hashing the pieces a unit
         * completes right after copying it, from its cache. A copy followed by a check on another thread reads the
         * bytes from memory twice: on this machine kind, in one process, 1 GiB took 90 ms that way (one thread copying,
         * one hashing) and 76 ms copied and hashed by two threads in 1 MiB units (a memcpy: 61 ms). Returns when every
         * unit is copied and hashed.
         */
        @Override
        public void copy(MemorySegment source, MemorySegment destination, long destinationOffset) {
            long n = source.byteSize();
            if (n != destination.byteSize()) {
                throw new IllegalArgumentException("copy of " + n + " bytes into " + destination.byteSize());
            }
            long[] ends = units(destinationOffset, destinationOffset + n);
            copyHelpers.run(ends.length, i -> {
                long from = i == 0 ? destinationOffset : ends[i - 1];
                long len = ends[i] - from;
                MemorySegment.copy(source, from - destinationOffset, destination, from - destinationOffset, len);
                hashes.arrivedAndHashHere(from, len);
            });
        }

        /**
         * Where the units of a copy of data {@code [from, to)} end: at hash piece ends, each at least a piece long but
         * the last.
         */
        private long[] units(long from, long to) {
            long[] ends = new long[(int) Math.min(Integer.MAX_VALUE - 8, (to - from) / TensorHashes.PIECE + 2)];
            int n = 0;
            for (long pos = from; pos < to; ) {
                long end = pos;
                do {
                    end = hashes.pieceEnd(end);
                } while (end - pos < TensorHashes.PIECE && end < to);
                pos = Math.min(end, to);
                ends[n++] = pos;
            }
            return Arrays.copyOf(ends, n);
        }

        /** Every byte is in: hashes what is left, waits for the pool, and checks every tensor in order. */
        void verify() {
            ContentHash[] got = hashes.await();
            for (int k = 0; k < entries.size(); k++) {
                check(manifest, location, entries.get(k), got[k]);
            }
        }

        /**
         * After {@link #verify()} passed: the hash of every piece, in data order, for a later load's {@code before}.
         */
        ContentHash[] pieces() {
            return hashes.pieces();
        }

        @Override
        public void close() {
            hashes.close();
        }
    }
}
