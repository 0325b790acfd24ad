package io.viper.tensor;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import java.util.Objects;

/**
 * A tensor without its bytes: name, element type, shape, and the byte range it occupies in the data section of its
 * checkpoint ({@code offset} from the start of the data, {@code length} bytes). Immutable; the shape array is copied in
 * and out.
 */
public record TensorInfo(String name, DType dtype, long[] shape, long offset, long length) {

    public TensorInfo {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(shape, "shape");
        shape = shape.clone();
        for (long d : shape) {
            if (d < 0) {
                throw new ViperConfigException(
                        "tensor " + name + ": negative dimension in shape " + Arrays.toString(shape));
            }
        }
        if (offset < 0 || length < 0) {
            throw new ViperConfigException(
                    "tensor " + name + ": negative offset or length (" + offset + ", " + length + ")");
        }
        long expected = byteSize(dtype, shape);
        if (expected != length) {
            throw new ViperConfigException("tensor " + name + ": length " + length + " does not match " + dtype + " x "
                    + Arrays.toString(shape) + " = " + expected + " bytes");
        }
    }

    /** A tensor info whose length is derived from dtype and shape. */
    public static TensorInfo of(String name, DType dtype, long[] shape, long offset) {
        return new TensorInfo(name, dtype, shape, offset, byteSize(dtype, shape));
    }

    @Override
    public long[] shape() {
        return shape.clone();
    }

    /** The number of dimensions (0 for a scalar). */
    public int rank() {
        return shape.length;
    }

    /** Number of elements: the product of the shape (1 for a scalar, 0 if any dimension is 0). */
    public long elementCount() {
        return elementCount(shape);
    }

    /** The product of {@code shape}; throws {@link ArithmeticException} on overflow. */
    public static long elementCount(long[] shape) {
        long n = 1;
        for (long d : shape) {
            n = Math.multiplyExact(n, d);
        }
        return n;
    }

    /** {@code dtype.byteSize() * product(shape)}; throws {@link ArithmeticException} on overflow. */
    public static long byteSize(DType dtype, long[] shape) {
        return Math.multiplyExact(elementCount(shape), (long) dtype.byteSize());
    }

    /** This info placed at another offset. */
    public TensorInfo withOffset(long newOffset) {
        return new TensorInfo(name, dtype, shape, newOffset, length);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorInfo t
                && name.equals(t.name)
                && dtype == t.dtype
                && Arrays.equals(shape, t.shape)
                && offset == t.offset
                && length == t.length;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape), offset, length);
    }

    @Override
    public String toString() {
        return name + ":" + dtype + Arrays.toString(shape) + "@" + offset + "+" + length;
    }
}
