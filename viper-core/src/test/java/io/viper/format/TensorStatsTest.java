package io.viper.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

class TensorStatsTest {
    private static Tensor f64(double... values) {
        return Tensor.of("t", DType.F64, new long[] {values.length}, MemorySegment.ofArray(values));
    }

    @Test
    void minMaxAreExactAndMeanIsCompensated() {
        TensorStats s = TensorStats.of(f64(1e16, 1, -1e16, 2)).orElseThrow();
        assertEquals(4, s.count());
        assertEquals(-1e16, s.min());
        assertEquals(1e16, s.max());
        assertEquals(0.75, s.mean(), 0.0, "a naive left-to-right sum would lose the 1");
    }

    @Test
    void emptyTensorsHaveNoStats() {
        assertTrue(TensorStats.of(Tensor.of("e", DType.F32, new long[] {3, 0}, MemorySegment.ofArray(new byte[0])))
                .isEmpty());
    }

    @Test
    void scalarsHaveOneElement() {
        TensorStats s = TensorStats.of(
                        Tensor.of("s", DType.I16, new long[] {}, MemorySegment.ofArray(new short[] {-7})))
                .orElseThrow();
        assertEquals(new TensorStats(1, -7, -7, -7), s);
    }

    @Test
    void nanPropagatesLikeNumpy() {
        TensorStats s = TensorStats.of(f64(1, Double.NaN, 3)).orElseThrow();
        assertTrue(Double.isNaN(s.min()) && Double.isNaN(s.max()) && Double.isNaN(s.mean()), s.toString());
    }

    @Test
    void infinitiesAreOrdinaryValues() {
        TensorStats s = TensorStats.of(f64(1, Double.POSITIVE_INFINITY, -3)).orElseThrow();
        assertEquals(-3, s.min());
        assertEquals(Double.POSITIVE_INFINITY, s.max());
        assertEquals(Double.POSITIVE_INFINITY, s.mean());
        TensorStats both = TensorStats.of(f64(Double.NEGATIVE_INFINITY, Double.POSITIVE_INFINITY))
                .orElseThrow();
        assertTrue(Double.isNaN(both.mean()), "inf - inf is NaN, as in NumPy");
        assertEquals(Double.NEGATIVE_INFINITY, both.min());
    }

    @Test
    void unsignedAndBoolElements() {
        TensorStats u64 = TensorStats.of(
                        Tensor.of("u", DType.U64, new long[] {2}, MemorySegment.ofArray(new long[] {-1L, 0})))
                .orElseThrow();
        assertEquals(0x1p64, u64.max());
        assertEquals(0.0, u64.min());
        TensorStats bool = TensorStats.of(
                        Tensor.of("b", DType.BOOL, new long[] {4}, MemorySegment.ofArray(new byte[] {0, 5, 1, 0})))
                .orElseThrow();
        assertEquals(new TensorStats(4, 0, 1, 0.5), bool);
    }
}
