package io.viper.transfer.cuda;

import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.transfer.cuda.internal.Cuda;
import io.viper.transfer.cuda.internal.JCudaDeviceBuffer;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * {@link GpuProvider} on the CUDA driver API through jcuda 12.6.0. Construction touches no native code; the driver is
 * probed on first use. Without {@code libcuda.so.1} or a device, {@link #unavailableReason()} says so in one line and
 * every other method throws {@link io.viper.errors.ViperException} ({@code UNAVAILABLE}) with it. Thread-safe; every
 * call is synchronous and uses the device's primary context.
 */
public final class JCudaGpuProvider implements GpuProvider {
    /** Loaded by {@link java.util.ServiceLoader}; CUDA is initialised on first use, not here. */
    public JCudaGpuProvider() {}

    @Override
    public String name() {
        return "jcuda";
    }

    @Override
    public Optional<String> unavailableReason() {
        return Cuda.unavailableReason();
    }

    @Override
    public int deviceCount() {
        return Cuda.deviceCount();
    }

    @Override
    public long freeBytes(int device) {
        return Cuda.freeBytes(device);
    }

    @Override
    public DeviceBuffer allocate(int device, long bytes) {
        Cuda.ensure();
        return new JCudaDeviceBuffer(device, bytes);
    }

    @Override
    public void copyToDevice(int device, MemorySegment src, long dstPointer) {
        Cuda.toDevice(device, src, dstPointer);
    }

    @Override
    public void copyToHost(int device, long srcPointer, MemorySegment dst) {
        Cuda.toHost(device, srcPointer, dst);
    }

    @Override
    public void copyDeviceToDevice(int device, long srcPointer, long dstPointer, long bytes) {
        Cuda.deviceToDevice(device, srcPointer, dstPointer, bytes);
    }

    @Override
    public long hash64(int device, long pointer, long length) {
        return Cuda.hash64(device, pointer, length);
    }

    @Override
    public PinnedHost pinHost(int device, MemorySegment host) {
        Cuda.registerHost(device, host);
        return PinnedHost.of(host, () -> Cuda.unregisterHost(device, host));
    }
}
