package io.viper.format;

import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.Optional;

/**
 * Minimum, maximum and mean of a tensor's elements, each element converted to {@code double} with
 * {@link DType#toDouble} (BOOL as 0/1, F8_E4M3 as the "fn" variant), as {@code viper inspect --stats} prints them.
 *
 * <p>Semantics follow NumPy's {@code min}, {@code max} and {@code mean} on a float64 copy: a NaN element makes all
 * three NaN; infinities take part as ordinary values. {@code min} and {@code max} are exact; {@code mean} is a
 * compensated (Neumaier) sum divided by the count, so it agrees with other implementations to rounding. Immutable.
 *
 * @param count the number of elements (at least 1)
 * @param min the smallest element
 * @param max the largest element
 * @param mean the arithmetic mean of the elements
 */
public record TensorStats(long count, double min, double max, double mean) {

    /**
     * Reads every element of {@code tensor} once; empty when it has no elements. The tensor's memory must be valid (its
     * owner open) for the duration of the call.
     */
    public static Optional<TensorStats> of(Tensor tensor) {
        long n = tensor.info().elementCount();
        if (n == 0) {
            return Optional.empty();
        }
        DType dtype = tensor.dtype();
        MemorySegment data = tensor.data();
        int width = dtype.byteSize();
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;
        double sum = 0;
        double compensation = 0;
        double naive = 0;
        boolean nan = false;
        for (long i = 0; i < n; i++) {
            double v = dtype.toDouble(data, i * width);
            if (Double.isNaN(v)) {
                nan = true;
                continue;
            }
            if (v < min) {
                min = v;
            }
            if (v > max) {
                max = v;
            }
            naive += v;
            double t = sum + v;
            if (Math.abs(sum) >= Math.abs(v)) {
                compensation += (sum - t) + v;
            } else {
                compensation += (v - t) + sum;
            }
            sum = t;
        }
        if (nan) {
            return Optional.of(new TensorStats(n, Double.NaN, Double.NaN, Double.NaN));
        }
        // With infinities the compensation turns to NaN; the plain sum then carries the right answer.
        double total = Double.isFinite(naive) ? sum + compensation : naive;
        return Optional.of(new TensorStats(n, min, max, total / n));
    }
}
