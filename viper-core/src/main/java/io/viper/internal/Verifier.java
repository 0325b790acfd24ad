package io.viper.internal;

import io.viper.errors.ViperCorruptDataException;
import io.viper.errors.ViperException;
import io.viper.hash.ContentHash;
import io.viper.hash.ParallelHash64;
import io.viper.hash.Xxh3;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * Checks the bytes a consumer received against the manifest before they may be served: the
 * XXH3-128 of every tensor, computed on the runtime's hash pool (while the rest of the model is
 * still arriving, see {@link #overlapped}), or for a model in GPU memory the manifest's phash64
 * computed on the device. The first mismatch throws {@link ViperCorruptDataException} naming the
 * model, version, location and tensor.
 *
 * <p>Called by the fetch thread, and by the caller of {@code ViperConsumer.fetch}; it only reads
 * the memory it is given, which the caller owns. Thread-safe (no state but the pool).
 */
final class Verifier {
    /** A model on the GPU without phash64 is copied to the host for hashing in pieces of this size. */
    private static final long HOST_CHUNK = 64L << 20;

    private final String model;
    private final ExecutorService hashPool;

    Verifier(String model, ExecutorService hashPool) {
        this.model = model;
        this.hashPool = hashPool;
    }

    /**
     * Starts checking a model that arrives in pieces: each piece is hashed on the pool as soon as it
     * is {@link Overlapped#submit submitted}, so that hashing overlaps the transfer of the next one.
     */
    Overlapped overlapped(Manifest m, Location loc) {
        return new Overlapped(m, loc);
    }

    /** Checks every tensor of {@code data}, the whole data section (a mapped file, say), on the pool. */
    void verifyAll(Manifest m, Location loc, MemorySegment data) {
        List<TensorEntry> entries = m.tensors();
        List<MemorySegment> slices = entries.stream().map(e -> data.asSlice(e.info().offset(), e.info().length())).toList();
        ContentHash[] got = Xxh3.hashAll(slices, hashPool);
        for (int i = 0; i < entries.size(); i++) {
            check(m, loc, entries.get(i), got[i]);
        }
    }

    /** Checks one tensor's bytes on the calling thread. */
    void verify(Manifest m, Location loc, TensorEntry e, MemorySegment bytes) {
        check(m, loc, e, Xxh3.hash128(bytes));
    }

    /**
     * Checks a model in GPU memory ({@code buf} holds its data section): the manifest's phash64
     * computed on the device where the producer gave it (8 result bytes cross to the host), else the
     * XXH3-128 over the bytes streamed to the host in 64 MiB chunks.
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
                        throw corrupt(m, loc, e, "phash64 " + ParallelHash64.toHex(got) + " does not match the manifest's "
                                + ParallelHash64.toHex(e.phash64().getAsLong()));
                    }
                    continue;
                }
                if (chunk == null) {
                    chunk = arena.allocate(HOST_CHUNK, 4096);
                }
                Xxh3.Hasher h = new Xxh3.Hasher();
                for (long done = 0; done < len; done += HOST_CHUNK) {
                    long n = Math.min(HOST_CHUNK, len - done);
                    MemorySegment part = chunk.asSlice(0, n);
                    gpu.copyToHost(device, buf.pointer(off + done, n), part);
                    h.update(part);
                }
                check(m, loc, e, h.digest());
            }
        }
    }

    private void check(Manifest m, Location loc, TensorEntry e, ContentHash got) {
        if (!e.hash().equals(got)) {
            throw corrupt(m, loc, e, "hash " + got.toHex() + " does not match the manifest's " + e.hash().toHex());
        }
    }

    private ViperCorruptDataException corrupt(Manifest m, Location loc, TensorEntry e, String problem) {
        return new ViperCorruptDataException(model + " v" + m.version() + " from " + loc.uri() + ": tensor '" + e.name() + "' " + problem);
    }

    /**
     * The check of one model arriving in pieces, used by one thread. {@link #close()} waits for every
     * hashing task still running, so that the caller may reuse the buffer after a failure.
     */
    final class Overlapped implements AutoCloseable {
        private final Manifest manifest;
        private final Location location;
        private final List<TensorEntry> entries = new ArrayList<>();
        private final List<Future<ContentHash>> pending = new ArrayList<>();

        private Overlapped(Manifest manifest, Location location) {
            this.manifest = manifest;
            this.location = location;
        }

        /** Starts hashing tensor {@code e}, whose bytes ({@code bytes}) have arrived. */
        void submit(TensorEntry e, MemorySegment bytes) {
            entries.add(e);
            pending.add(hashPool.submit(() -> Xxh3.hash128(bytes)));
        }

        /** Waits for every submitted tensor's hash and checks them in order. */
        void verify() {
            try {
                for (int k = 0; k < entries.size(); k++) {
                    check(manifest, location, entries.get(k), pending.get(k).get());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ViperException(ViperException.Reason.INTERNAL, "consumer " + model + ": interrupted while verifying");
            } catch (ExecutionException e) {
                throw new ViperException(ViperException.Reason.INTERNAL, "consumer " + model + ": hashing failed: " + e.getCause(), e.getCause());
            }
        }

        @Override
        public void close() {
            for (Future<ContentHash> f : pending) {
                try {
                    f.get();
                } catch (Exception ignored) {
                    // reported by verify(), or irrelevant after a failure
                }
            }
        }
    }
}
