package io.viper.internal.producer;

import io.viper.errors.ViperConfigException;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * One tensor of a snapshot, as the training code described it, to be copied into staging: from a segment, a float
 * array, or GPU memory ({@code device >= 0}). The memory stays the training code's; it is read only during the stall,
 * on the training thread.
 */
record SnapshotTensor(
        String name, DType dtype, long[] shape, MemorySegment segment, float[] floats, long devicePointer, int device) {
    private static final ValueLayout.OfFloat LE_FLOAT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    boolean onDevice() {
        return device >= 0;
    }

    /** The tensor's size; throws {@link ViperConfigException} when its shape overflows. */
    long byteSize() {
        try {
            return TensorInfo.byteSize(dtype, shape);
        } catch (ArithmeticException e) {
            throw new ViperConfigException(
                    "tensor " + name + ": shape " + Arrays.toString(shape) + " overflows 64 bits");
        }
    }

    /** Copies a host tensor (segment or floats) to {@code dst} at {@code offset}. */
    void copyTo(MemorySegment dst, long offset) {
        copyTo(dst, offset, 0, byteSize());
    }

    /**
     * Copies bytes {@code [from, from + length)} of a host tensor to {@code dst} at {@code offset + from}; for floats
     * both are multiples of 4.
     */
    void copyTo(MemorySegment dst, long offset, long from, long length) {
        if (segment != null) {
            MemorySegment.copy(segment, from, dst, offset + from, length);
        } else {
            MemorySegment.copy(
                    floats, (int) (from / Float.BYTES), dst, LE_FLOAT, offset + from, (int) (length / Float.BYTES));
        }
    }
}
