package io.viper.transfer.cuda.internal;

import io.viper.spi.DeviceBuffer;
import java.util.concurrent.atomic.AtomicBoolean;

/** Device memory from {@code cuMemAlloc}; {@link #close()} frees it once. Thread-safe. */
public final class JCudaDeviceBuffer implements DeviceBuffer {
    private final int device;
    private final long pointer;
    private final long size;
    private final AtomicBoolean closed = new AtomicBoolean();

    /** Allocates {@code size} bytes on {@code device}. */
    public JCudaDeviceBuffer(int device, long size) {
        if (size < 1) {
            throw new IllegalArgumentException("device buffer size must be positive, got " + size);
        }
        this.device = device;
        this.size = size;
        this.pointer = Cuda.alloc(device, size);
    }

    @Override
    public int device() {
        return device;
    }

    @Override
    public long devicePointer() {
        return pointer;
    }

    @Override
    public long byteSize() {
        return size;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            Cuda.free(device, pointer);
        }
    }

    @Override
    public String toString() {
        return "device buffer of " + size + " bytes at 0x" + Long.toHexString(pointer) + " on CUDA device " + device;
    }
}
