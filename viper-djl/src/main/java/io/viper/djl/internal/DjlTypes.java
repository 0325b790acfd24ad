package io.viper.djl.internal;

import ai.djl.ndarray.types.DataType;
import io.viper.errors.ViperUnsupportedException;
import io.viper.tensor.DType;
import java.util.Map;

/** DJL's element types and Viper's (safetensors') for the types both have. Stateless. */
public final class DjlTypes {
    private static final Map<DataType, DType> TO_VIPER = Map.ofEntries(
            Map.entry(DataType.FLOAT64, DType.F64),
            Map.entry(DataType.FLOAT32, DType.F32),
            Map.entry(DataType.FLOAT16, DType.F16),
            Map.entry(DataType.BFLOAT16, DType.BF16),
            Map.entry(DataType.INT64, DType.I64),
            Map.entry(DataType.INT32, DType.I32),
            Map.entry(DataType.INT16, DType.I16),
            Map.entry(DataType.INT8, DType.I8),
            Map.entry(DataType.UINT64, DType.U64),
            Map.entry(DataType.UINT32, DType.U32),
            Map.entry(DataType.UINT16, DType.U16),
            Map.entry(DataType.UINT8, DType.U8),
            Map.entry(DataType.BOOLEAN, DType.BOOL));

    private DjlTypes() {}

    /**
     * Viper's type for {@code type}.
     *
     * @throws ViperUnsupportedException for a DJL type safetensors has no equivalent of (complex, string)
     */
    public static DType toViper(DataType type, String tensor) {
        DType t = TO_VIPER.get(type);
        if (t == null) {
            throw new ViperUnsupportedException(
                    "parameter " + tensor + ": DJL type " + type + " has no safetensors equivalent");
        }
        return t;
    }
}
