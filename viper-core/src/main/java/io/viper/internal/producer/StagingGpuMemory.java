package io.viper.internal.producer;

import io.viper.errors.ViperException;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * The GPU memory that goes with one {@link StagingBuffer}: the page-locked registration of its host memory (made on the
 * first GPU copy, kept until the buffer is freed) and GPU staging memory that a GPU-staged version is copied into,
 * reused from version to version while it fits.
 *
 * <p>Used by the thread filling the buffer (the training thread; the background thread for the host copy of a
 * GPU-staged version); {@link #view()} by transport threads once the version is staged; {@link #close()} by the staging
 * cache when it frees the buffer.
 */
final class StagingGpuMemory implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(StagingGpuMemory.class.getName());

    private final String model;
    private final MemorySegment host;
    private DeviceBuffer deviceMemory;
    private volatile DeviceBuffer view;
    /** The page-locked registration of {@link #host}; null if none. */
    private GpuProvider.PinnedHost pinned;
    /** Why pinning failed, so that it is tried (and logged) once per buffer. */
    private String pinFailure;

    StagingGpuMemory(String model, MemorySegment host) {
        this.model = model;
        this.host = host;
    }

    /**
     * Page-locks the host memory for copies to and from GPU {@code device}, once per buffer.
     *
     * @return null when the memory is pinned, else why it stays pageable (the driver refused)
     */
    String pinHost(GpuProvider gpu, int device) {
        if (pinned == null && pinFailure == null) {
            try {
                pinned = gpu.pinHost(device, host);
            } catch (ViperException | IllegalArgumentException e) {
                pinFailure = e.getMessage();
                LOG.log(
                        System.Logger.Level.WARNING,
                        "{0}: a staging buffer of {1} bytes stays in pageable memory, so GPU copies of it are slower:"
                                + " {2}",
                        model,
                        Long.toString(host.byteSize()),
                        e.getMessage());
            }
        }
        return pinned != null ? null : pinFailure;
    }

    /**
     * GPU staging memory of at least {@code size} bytes on {@code device} for this version (while the buffer is
     * FILLING): the previous allocation is reused when it fits, else replaced. The version is served from it once
     * {@link #staged} was called.
     */
    DeviceBuffer deviceMemory(GpuProvider gpu, int device, long size) {
        if (deviceMemory != null && (deviceMemory.device() != device || deviceMemory.byteSize() < size)) {
            closeDevice();
        }
        if (deviceMemory == null) {
            deviceMemory = gpu.allocate(device, Math.max(1, size));
        }
        return deviceMemory;
    }

    /** The buffer starts a new version: not GPU-staged until {@link #staged} says so. */
    void newVersion() {
        view = null;
    }

    /** This version's {@code size} bytes are in the GPU staging memory too. */
    void staged(long size) {
        DeviceBuffer d = deviceMemory;
        view = new DeviceView(d.device(), d.devicePointer(), size);
    }

    /** The GPU copy of this version, if it was staged on the GPU. */
    Optional<DeviceBuffer> view() {
        return Optional.ofNullable(view);
    }

    /** Frees the GPU staging memory, keeping the pinning (for a buffer that stays). */
    private void closeDevice() {
        if (deviceMemory != null) {
            deviceMemory.close();
            deviceMemory = null;
            view = null;
        }
    }

    /** Unpins the host memory and frees the GPU staging memory. */
    @Override
    public void close() {
        if (pinned != null) {
            try {
                pinned.close();
            } catch (RuntimeException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "unpinning a staging buffer of " + model + " failed: " + e.getMessage());
            }
            pinned = null;
        }
        closeDevice();
    }

    /** A version's view of the GPU staging memory; the buffer owns the memory, so close does nothing. */
    private record DeviceView(int device, long devicePointer, long byteSize) implements DeviceBuffer {
        @Override
        public void close() {}
    }
}
