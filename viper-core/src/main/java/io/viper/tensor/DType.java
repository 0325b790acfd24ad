package io.viper.tensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Optional;

/**
 * The element types of the safetensors format, with their byte size and an exact conversion of one little-endian
 * element to {@code double}.
 *
 * <p>{@link #F8_E4M3} is the "fn" variant used by PyTorch's {@code float8_e4m3fn}: no infinities, and S.1111.111 is
 * NaN. {@link #F8_E5M2} follows IEEE rules (infinities and NaNs).
 */
public enum DType {
    F64(8),
    F32(4),
    F16(2),
    BF16(2),
    F8_E4M3(1),
    F8_E5M2(1),
    I64(8),
    I32(4),
    I16(2),
    I8(1),
    U64(8),
    U32(4),
    U16(2),
    U8(1),
    BOOL(1);

    private static final ValueLayout.OfLong LE_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt LE_INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort LE_SHORT =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfDouble LE_DOUBLE =
            ValueLayout.JAVA_DOUBLE_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat LE_FLOAT =
            ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int byteSize;

    DType(int byteSize) {
        this.byteSize = byteSize;
    }

    /** Bytes per element. */
    public int byteSize() {
        return byteSize;
    }

    /** The name used in safetensors headers (the enum constant's name). */
    public String safetensorsName() {
        return name();
    }

    /** The dtype for a safetensors header name, or empty when the name is unknown. */
    public static Optional<DType> fromSafetensorsName(String name) {
        for (DType t : values()) {
            if (t.name().equals(name)) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }

    /**
     * Reads the element that starts at {@code byteOffset} in {@code segment} (little-endian) and returns its exact
     * value as a double (U64 and I64 values above 2^53 are rounded to nearest). BOOL is 1 for any non-zero byte, else
     * 0.
     */
    public double toDouble(MemorySegment segment, long byteOffset) {
        return switch (this) {
            case F64 -> segment.get(LE_DOUBLE, byteOffset);
            case F32 -> segment.get(LE_FLOAT, byteOffset);
            case F16 -> Float.float16ToFloat(segment.get(LE_SHORT, byteOffset));
            case BF16 -> Float.intBitsToFloat((segment.get(LE_SHORT, byteOffset) & 0xFFFF) << 16);
            case F8_E4M3 -> f8e4m3fnToDouble(segment.get(ValueLayout.JAVA_BYTE, byteOffset));
            case F8_E5M2 -> f8e5m2ToDouble(segment.get(ValueLayout.JAVA_BYTE, byteOffset));
            case I64 -> segment.get(LE_LONG, byteOffset);
            case I32 -> segment.get(LE_INT, byteOffset);
            case I16 -> segment.get(LE_SHORT, byteOffset);
            case I8 -> segment.get(ValueLayout.JAVA_BYTE, byteOffset);
            case U64 -> unsignedLongToDouble(segment.get(LE_LONG, byteOffset));
            case U32 -> Integer.toUnsignedLong(segment.get(LE_INT, byteOffset));
            case U16 -> segment.get(LE_SHORT, byteOffset) & 0xFFFF;
            case U8 -> segment.get(ValueLayout.JAVA_BYTE, byteOffset) & 0xFF;
            case BOOL -> segment.get(ValueLayout.JAVA_BYTE, byteOffset) != 0 ? 1.0 : 0.0;
        };
    }

    /** float8_e4m3fn: bias 7, no infinities, S.1111.111 is NaN. */
    static double f8e4m3fnToDouble(byte b) {
        int bits = b & 0xFF;
        double sign = (bits & 0x80) != 0 ? -1.0 : 1.0;
        int exponent = (bits >>> 3) & 0xF;
        int mantissa = bits & 0x7;
        if (exponent == 0xF && mantissa == 0x7) {
            return Double.NaN;
        }
        if (exponent == 0) {
            return sign * Math.scalb(mantissa / 8.0, -6);
        }
        return sign * Math.scalb(1.0 + mantissa / 8.0, exponent - 7);
    }

    /** float8_e5m2: bias 15, IEEE infinities and NaNs. */
    static double f8e5m2ToDouble(byte b) {
        int bits = b & 0xFF;
        double sign = (bits & 0x80) != 0 ? -1.0 : 1.0;
        int exponent = (bits >>> 2) & 0x1F;
        int mantissa = bits & 0x3;
        if (exponent == 0x1F) {
            return mantissa == 0 ? sign * Double.POSITIVE_INFINITY : Double.NaN;
        }
        if (exponent == 0) {
            return sign * Math.scalb(mantissa / 4.0, -14);
        }
        return sign * Math.scalb(1.0 + mantissa / 4.0, exponent - 15);
    }

    /** Unsigned 64-bit to double with round-to-nearest (the halving keeps the sticky bit). */
    static double unsignedLongToDouble(long v) {
        if (v >= 0) {
            return v;
        }
        return ((double) ((v >>> 1) | (v & 1))) * 2.0;
    }
}
