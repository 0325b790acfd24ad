package io.viper.tensor;

import io.viper.errors.ViperConfigException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Objects;

/**
 * A named tensor: its {@link TensorInfo} and a read-only view of its little-endian bytes.
 *
 * <p>Ownership: a {@code Tensor} does not own its memory. The segment stays valid as long as its owner does (the
 * {@code SafetensorsFile} it was read from, the {@code ModelLease} it was taken from, or the arena the caller allocated
 * it in); using it afterwards throws {@link IllegalStateException}. Any thread may read it while the owner is open.
 */
public record Tensor(TensorInfo info, MemorySegment data) {
    private static final ValueLayout.OfFloat LE_FLOAT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    public Tensor {
        Objects.requireNonNull(info, "info");
        Objects.requireNonNull(data, "data");
        if (data.byteSize() != info.length()) {
            throw new ViperConfigException("tensor " + info.name() + ": segment has " + data.byteSize() + " bytes but "
                    + info.dtype() + " x shape needs " + info.length());
        }
        data = data.asReadOnly();
    }

    /** A tensor over {@code data}, offset 0 (offsets are assigned when a checkpoint is laid out). */
    public static Tensor of(String name, DType dtype, long[] shape, MemorySegment data) {
        return new Tensor(new TensorInfo(name, dtype, shape, 0, data.byteSize()), data);
    }

    /**
     * Copies {@code values} into a new off-heap F32 tensor allocated in {@code arena} (the arena owns the memory; close
     * it to free it).
     */
    public static Tensor ofFloats(String name, long[] shape, float[] values, Arena arena) {
        long n = TensorInfo.elementCount(shape);
        if (n != values.length) {
            throw new ViperConfigException(
                    "tensor " + name + ": shape holds " + n + " elements but " + values.length + " values were given");
        }
        MemorySegment seg = arena.allocate((long) values.length * 4, 8);
        MemorySegment.copy(values, 0, seg, LE_FLOAT, 0, values.length);
        return of(name, DType.F32, shape, seg);
    }

    public String name() {
        return info.name();
    }

    public DType dtype() {
        return info.dtype();
    }

    public long[] shape() {
        return info.shape();
    }

    public long byteSize() {
        return info.length();
    }

    /** Element {@code index} (flat, row-major) as a double; see {@link DType#toDouble}. */
    public double getDouble(long index) {
        return info.dtype().toDouble(data, index * info.dtype().byteSize());
    }

    /** Copies an F32 tensor into a new float array. */
    public float[] toFloatArray() {
        if (info.dtype() != DType.F32) {
            throw new ViperConfigException("tensor " + name() + ": is " + info.dtype() + ", not F32");
        }
        long n = info.elementCount();
        if (n > Integer.MAX_VALUE - 8) {
            throw new ViperConfigException("tensor " + name() + ": " + n + " elements do not fit a Java array");
        }
        float[] out = new float[(int) n];
        MemorySegment.copy(data, LE_FLOAT, 0, out, 0, out.length);
        return out;
    }
}
