package io.viper.agent.internal;

import io.viper.ModelLease;
import io.viper.errors.ViperException;
import io.viper.format.SafetensorsHeader;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Where clients read the versions of one model they lease: a file and the offset of a safetensors image in it. A
 * version the consumer received into one of the {@link SharedReceiveBuffers} is read in place, its header written into
 * the headroom in front of the data. Any other version (mapped from the PFS, received into private memory, or in a file
 * someone deleted) is copied once into a file of its own, kept while a lease reads it or while it is the newest copy.
 *
 * <p>Thread-safe; called by the connections of the clients that follow the model.
 */
final class ModelFiles implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ModelFiles.class.getName());

    private final String model;
    private final SharedMemory shm;
    private final SharedReceiveBuffers receive;
    private final TreeMap<Long, Copy> copies = new TreeMap<>(); // guarded by this

    ModelFiles(String model, SharedMemory shm, SharedReceiveBuffers receive) {
        this.model = model;
        this.shm = shm;
        this.receive = receive;
    }

    /**
     * A leased version as clients see it: {@code bytes} of a safetensors image at {@code offset} in {@code path}.
     * {@code release} runs when the lease ends.
     */
    record View(Path path, long offset, long bytes, Runnable release) {}

    private static final class Copy {
        final ShmFile file;
        int readers;

        Copy(ShmFile file) {
            this.file = file;
        }
    }

    /** The view of {@code lease}'s version; valid while the lease is open and until its release runs. */
    View open(ModelLease lease) {
        Manifest m = lease.manifest();
        byte[] header = header(m);
        List<Tensor> tensors = lease.tensors();
        if (!tensors.isEmpty()) {
            Tensor first = tensors.getFirst();
            long base = first.data().address() - first.info().offset();
            Optional<SharedReceiveBuffers.Region> region = receive.find(base);
            if (region.isPresent() && writeHeader(region.get(), m.version(), header)) {
                SharedReceiveBuffers.Region r = region.get();
                return new View(
                        r.file.path(),
                        SharedReceiveBuffers.HEADROOM - header.length,
                        header.length + m.totalBytes(),
                        () -> {});
            }
        }
        return copy(lease, header);
    }

    /** Puts the header in front of the data unless the file is gone or the header does not fit. */
    private boolean writeHeader(SharedReceiveBuffers.Region r, long version, byte[] header) {
        synchronized (r) {
            if (!r.file.linked()) {
                if (!r.reportedDeleted) {
                    r.reportedDeleted = true;
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "model " + model + ": shared-memory file " + r.file.path()
                                    + " was deleted under the agent; clients get copies of the versions received into"
                                    + " it");
                }
                return false;
            }
            if (header.length > SharedReceiveBuffers.HEADROOM) {
                return false; // a header this large is copied with its model instead
            }
            if (r.headerVersion != version || r.headerBytes != header.length) {
                MemorySegment.copy(
                        MemorySegment.ofArray(header),
                        0,
                        r.file.segment(),
                        SharedReceiveBuffers.HEADROOM - header.length,
                        header.length);
                r.headerVersion = version;
                r.headerBytes = header.length;
            }
            return true;
        }
    }

    private synchronized View copy(ModelLease lease, byte[] header) {
        long version = lease.version();
        Copy c = copies.get(version);
        if (c != null && !c.file.linked()) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "model " + model + ": shared-memory file " + c.file.path()
                            + " was deleted under the agent; copying v" + version + " again");
            copies.remove(version);
            if (c.readers == 0) {
                c.file.close();
            }
            c = null;
        }
        if (c == null) {
            c = new Copy(shm.create("copy", header.length + lease.manifest().totalBytes()));
            MemorySegment dst = c.file.segment();
            MemorySegment.copy(MemorySegment.ofArray(header), 0, dst, 0, header.length);
            for (Tensor t : lease.tensors()) {
                MemorySegment.copy(t.data(), 0, dst, header.length + t.info().offset(), t.byteSize());
            }
            copies.put(version, c);
            evict(version);
        }
        c.readers++;
        Copy held = c;
        return new View(c.file.path(), 0, c.file.byteSize(), () -> release(version, held));
    }

    private synchronized void release(long version, Copy c) {
        c.readers--;
        if (c.readers == 0 && copies.get(version) != c) {
            c.file.close(); // replaced meanwhile
        }
        evict(copies.isEmpty() ? version : copies.lastKey());
    }

    /** Closes copies older than {@code newest} that no lease reads. Caller holds the monitor. */
    private void evict(long newest) {
        for (Iterator<Map.Entry<Long, Copy>> it = copies.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<Long, Copy> e = it.next();
            if (e.getKey() < newest && e.getValue().readers == 0) {
                e.getValue().file.close();
                it.remove();
            }
        }
    }

    private static byte[] header(Manifest m) {
        try {
            return SafetensorsHeader.encode(
                    m.tensors().stream().map(TensorEntry::info).toList(), m.metadata());
        } catch (IllegalArgumentException e) {
            throw new ViperException(
                    ViperException.Reason.INTERNAL,
                    "model " + m.model() + " v" + m.version() + ": cannot describe it as safetensors: "
                            + e.getMessage(),
                    e);
        }
    }

    /** Closes every copy; leases still open keep reading their mapping in the client. */
    @Override
    public synchronized void close() {
        copies.values().forEach(c -> c.file.close());
        copies.clear();
    }
}
