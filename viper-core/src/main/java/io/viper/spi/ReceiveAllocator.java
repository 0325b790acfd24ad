package io.viper.spi;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Where a consumer's host receive buffers come from. The default, {@link #offHeap()}, is native memory private to this
 * process; a process that hands the models it receives to other processes installs its own with
 * {@code Viper.Builder.receiveAllocator} (the viper agent allocates them in files under {@code /dev/shm} that its
 * clients map, so that they read a model without a copy).
 *
 * <p>Called on a consumer's fetch thread ({@link #allocate}); a buffer is closed by whichever thread hands it back last
 * (an inference thread closing its lease, the fetch thread, or the thread closing the consumer). Implementations are
 * thread-safe.
 */
public interface ReceiveAllocator {
    /**
     * At least {@code bytes} of native memory, zeroed or not, aligned to 4096 bytes, readable and writable from any
     * thread until the buffer is closed.
     */
    Buffer allocate(long bytes);

    /** One receive buffer; the consumer closes it once no model lives in it any more. */
    interface Buffer extends AutoCloseable {
        /** The memory ({@code bytes} long as asked), valid until {@link #close()}. */
        MemorySegment segment();

        @Override
        void close();
    }

    /**
     * Whether other processes read the models in these buffers in place (the agent's clients). A consumer then reads a
     * version the PFS keeps as blocks into one of them, where it would otherwise map the block files in place, which it
     * would have to copy for those processes. Default: false.
     */
    default boolean handsBuffersToOtherProcesses() {
        return false;
    }

    /** Native memory of this process, freed on close. */
    static ReceiveAllocator offHeap() {
        return bytes -> {
            Arena arena = Arena.ofShared();
            MemorySegment segment = arena.allocate(Math.max(1, bytes), 4096);
            return new Buffer() {
                @Override
                public MemorySegment segment() {
                    return segment;
                }

                @Override
                public void close() {
                    arena.close();
                }
            };
        };
    }
}
