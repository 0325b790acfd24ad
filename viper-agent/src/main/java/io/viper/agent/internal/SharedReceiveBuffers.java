package io.viper.agent.internal;

import io.viper.errors.ViperException;
import io.viper.spi.ReceiveAllocator;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The agent's consumers receive models straight into shared-memory files, so that a client reads a leased version in
 * place, without a copy. Each file keeps {@link #HEADROOM} bytes in front of the data section, where {@link ModelFiles}
 * writes the version's safetensors header: the file then holds a safetensors image that ends with the data. Where
 * {@code /dev/shm} has no room, a buffer falls back to private memory (one log line) and clients get copies.
 *
 * <p>Thread-safe: the consumers' fetch threads allocate, any thread closes, agent threads look up.
 */
final class SharedReceiveBuffers implements ReceiveAllocator {
    private static final System.Logger LOG = System.getLogger(SharedReceiveBuffers.class.getName());

    /** Room for the safetensors header in front of the data: about 8,000 tensors' entries; page-aligned. */
    static final long HEADROOM = 1 << 20;

    private final SharedMemory shm;
    private final List<Region> regions = new CopyOnWriteArrayList<>();

    SharedReceiveBuffers(SharedMemory shm) {
        this.shm = shm;
    }

    /**
     * A receive buffer in a shared-memory file, its data section starting at {@link #HEADROOM}. Owned by the consumer
     * that allocated it; {@link ModelFiles} writes headers into its headroom while a lease holds the version in it.
     */
    static final class Region {
        final ShmFile file;
        final MemorySegment data;
        long headerVersion = -1; // guarded by this
        int headerBytes; // guarded by this
        boolean reportedDeleted; // guarded by this

        Region(ShmFile file, MemorySegment data) {
            this.file = file;
            this.data = data;
        }

        boolean contains(long address) {
            return address >= data.address() && address < data.address() + data.byteSize();
        }
    }

    @Override
    public boolean handsBuffersToOtherProcesses() {
        return true; // clients map the shared-memory files
    }

    @Override
    public Buffer allocate(long bytes) {
        ShmFile file;
        try {
            file = shm.create("model", HEADROOM + bytes);
        } catch (ViperException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "receiving a model of " + bytes + " bytes into private memory: " + e.getMessage()
                            + "; clients get copies of it");
            return ReceiveAllocator.offHeap().allocate(bytes);
        }
        Region region = new Region(file, file.segment().asSlice(HEADROOM, bytes));
        regions.add(region);
        return new Buffer() {
            @Override
            public MemorySegment segment() {
                return region.data;
            }

            @Override
            public void close() {
                regions.remove(region);
                file.close();
            }
        };
    }

    /** The region whose data section holds {@code address}, if a shared file does. */
    Optional<Region> find(long address) {
        for (Region r : regions) {
            if (r.contains(address)) {
                return Optional.of(r);
            }
        }
        return Optional.empty();
    }
}
