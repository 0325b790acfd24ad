package io.viper.spi;

/**
 * A block of GPU memory allocated by a {@link GpuProvider}: {@link #byteSize()} bytes at {@link #devicePointer()} on
 * CUDA device {@link #device()}.
 *
 * <p>Ownership: whoever allocated it closes it; {@link #close()} frees the memory, is idempotent, and must only be
 * called once nobody copies into or out of it any more. The accessors may be called from any thread, also after close
 * (the pointer is then dangling and must not be used).
 */
public interface DeviceBuffer extends AutoCloseable {
    /** The CUDA device ordinal the memory lives on. */
    int device();

    /** The device address of the first byte (a CUDA {@code CUdeviceptr}, unified addressing). */
    long devicePointer();

    /** The size in bytes. */
    long byteSize();

    /**
     * The device address of byte {@code offset}, after checking that {@code length} bytes from there lie inside this
     * buffer.
     *
     * @throws IllegalArgumentException when the range does not fit
     */
    default long pointer(long offset, long length) {
        if (offset < 0 || length < 0 || offset > byteSize() - length) {
            throw new IllegalArgumentException(
                    "range " + offset + "+" + length + " is outside the device buffer of " + byteSize() + " bytes");
        }
        return devicePointer() + offset;
    }

    /** Frees the memory; idempotent. */
    @Override
    void close();
}
