package io.viper.spi;

import java.lang.foreign.MemorySegment;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * GPU memory for viper-core without a CUDA library in core: device buffers, copies and the device-side
 * {@link io.viper.hash.ParallelHash64 parallel hash}. Found with {@link java.util.ServiceLoader}; viper-transfer-cuda
 * implements it with jcuda.
 *
 * <p>Implementations must be cheap to construct: the driver is probed in {@link #unavailableReason()}. When that is
 * present (no driver, no device), every other method throws {@link io.viper.errors.ViperUnsupportedException} with the
 * same one-line message, never a linkage error.
 *
 * <p>Threads: every method is thread-safe and synchronous (the copy or hash is complete on the device when it returns,
 * so a host buffer may be reused and a device buffer read by another process at once). Pointers are CUDA unified
 * addresses; a raw pointer passed in (a training framework's tensor) stays owned by the caller and must stay valid for
 * the call.
 */
public interface GpuProvider {
    /** How every "no CUDA here" reason starts, from every GPU entry point. */
    String NO_CUDA = "no CUDA driver/device: ";

    /** A short name for logs, e.g. {@code jcuda}. */
    String name();

    /** Empty when CUDA works here; otherwise one line starting {@code "no CUDA driver/device: "}. */
    Optional<String> unavailableReason();

    /** Number of CUDA devices visible to this process. */
    int deviceCount();

    /** Free memory on {@code device} now, in bytes (the driver's {@code cuMemGetInfo}). */
    long freeBytes(int device);

    /** Allocates {@code bytes} (at least 1) on {@code device}; the caller owns and closes the result. */
    DeviceBuffer allocate(int device, long bytes);

    /** Copies {@code src} (host memory, native segments are fastest) to {@code dstPointer} on {@code device}. */
    void copyToDevice(int device, MemorySegment src, long dstPointer);

    /** Copies {@code dst.byteSize()} bytes from {@code srcPointer} on {@code device} into host memory {@code dst}. */
    void copyToHost(int device, long srcPointer, MemorySegment dst);

    /** Copies {@code bytes} from device memory {@code srcPointer} to {@code dstPointer} (device to device). */
    void copyDeviceToDevice(int device, long srcPointer, long dstPointer, long bytes);

    /**
     * {@link io.viper.hash.ParallelHash64} of {@code length} bytes at {@code pointer}, computed on the device: only 8
     * bytes (the result) and at most 7 tail bytes travel to the host.
     */
    long hash64(int device, long pointer, long length);

    /**
     * Page-locks the native host memory {@code host} for fast, DMA-driven copies to and from {@code device} (the
     * driver's {@code cuMemHostRegister}). The memory stays owned by the caller, who must close the result before
     * freeing it; while pinned it may be read and written as usual.
     *
     * @throws io.viper.errors.RetriableViperException {@code UNAVAILABLE} when the driver refuses (memory limits,
     *     already registered); callers may then go on with pageable memory
     * @throws IllegalArgumentException when {@code host} is not a native segment
     */
    PinnedHost pinHost(int device, MemorySegment host);

    /** A host range pinned by {@link #pinHost}; {@link #close()} unpins it and is idempotent. */
    interface PinnedHost extends AutoCloseable {
        /** The pinned bytes. */
        MemorySegment segment();

        @Override
        void close();

        /** A pinned range whose first {@link #close()} runs {@code unpin} (later ones do nothing). */
        static PinnedHost of(MemorySegment host, Runnable unpin) {
            AtomicBoolean closed = new AtomicBoolean();
            return new PinnedHost() {
                @Override
                public MemorySegment segment() {
                    return host;
                }

                @Override
                public void close() {
                    if (closed.compareAndSet(false, true)) {
                        unpin.run();
                    }
                }
            };
        }
    }
}
