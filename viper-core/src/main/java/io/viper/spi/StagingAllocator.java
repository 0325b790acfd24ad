package io.viper.spi;

import java.lang.foreign.MemorySegment;

/**
 * Memory a transport provides for the producer's staging buffers, so that a buffer is registered with the transport
 * once and reused for many versions (UCX reads UCX-allocated shared memory at memcpy speed and consumers keep its
 * remote key cached across versions).
 *
 * <p>Called by the producer's staging cache, from the training thread (allocate) and from any thread (close).
 * Thread-safe.
 */
public interface StagingAllocator {
    /** Allocates {@code bytes} of native memory, zeroed or not, registered until closed. */
    Memory allocate(long bytes);

    /** One allocation; {@link #close()} frees it (only once no transfer reads it). */
    interface Memory extends AutoCloseable {
        /** The memory, valid until close. Readable and writable from any thread. */
        MemorySegment segment();

        @Override
        void close();
    }
}
