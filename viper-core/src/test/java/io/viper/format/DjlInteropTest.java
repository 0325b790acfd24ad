package io.viper.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.util.passthrough.PassthroughNDManager;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Interoperability with an independent implementation: DJL 0.38.0's safetensors codec
 * ({@code NDList.encode(Encoding.SAFETENSORS)} and {@code NDList.decode}). DJL needs an {@code NDManager} to hold
 * arrays; no native engine is available in unit tests, so this uses DJL's pure-Java {@link PassthroughNDManager}, whose
 * arrays wrap a {@link ByteBuffer} as is. DJL's codec supports F64, F32, F16, BF16, I64, I32, I8, U8 and BOOL, so those
 * are the dtypes exchanged.
 */
class DjlInteropTest {
    private static final Map<DType, DataType> DJL_TYPES = Map.of(
            DType.F64,
            DataType.FLOAT64,
            DType.F32,
            DataType.FLOAT32,
            DType.F16,
            DataType.FLOAT16,
            DType.BF16,
            DataType.BFLOAT16,
            DType.I64,
            DataType.INT64,
            DType.I32,
            DataType.INT32,
            DType.I8,
            DataType.INT8,
            DType.U8,
            DataType.UINT8,
            DType.BOOL,
            DataType.BOOLEAN);
    private static final List<DType> SHARED =
            List.of(DType.F64, DType.F32, DType.F16, DType.BF16, DType.I64, DType.I32, DType.I8, DType.U8, DType.BOOL);

    @TempDir
    Path dir;

    private static long[][] shapes() {
        return new long[][] {{3, 4}, {}, {5}, {2, 0, 3}, {1, 1, 7}, {16}, {2, 3, 2}, {9}, {4, 4}};
    }

    private static byte[] randomBytes(Random r, DType dtype, long[] shape) {
        byte[] b = new byte[(int) TensorInfo.byteSize(dtype, shape)];
        r.nextBytes(b);
        if (dtype == DType.BOOL) {
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) (b[i] & 1);
            }
        }
        return b;
    }

    private static byte[] bytesOf(NDArray array) {
        ByteBuffer bb = array.toByteBuffer().duplicate();
        byte[] out = new byte[bb.remaining()];
        bb.get(out);
        return out;
    }

    @Test
    void djlWritesWeRead() throws IOException {
        Random r = new Random(42);
        PassthroughNDManager manager = PassthroughNDManager.INSTANCE;
        NDList list = new NDList();
        Map<String, byte[]> bytes = new HashMap<>();
        long[][] shapes = shapes();
        for (int i = 0; i < SHARED.size(); i++) {
            DType dtype = SHARED.get(i);
            byte[] b = randomBytes(r, dtype, shapes[i]);
            ByteBuffer buffer = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
            NDArray array = manager.create(buffer, new Shape(shapes[i]), DJL_TYPES.get(dtype));
            String name = "layer" + i + ".weight";
            array.setName(name);
            list.add(array);
            bytes.put(name, b);
        }
        Path p = dir.resolve("djl.safetensors");
        Files.write(p, list.encode(NDList.Encoding.SAFETENSORS));

        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertEquals(SHARED.size(), f.tensors().size());
            long offset = 0;
            for (Tensor t : f.tensors()) {
                assertEquals(offset, t.info().offset(), "data order");
                offset += t.byteSize();
            }
            for (int i = 0; i < SHARED.size(); i++) {
                String name = "layer" + i + ".weight";
                Tensor t = f.tensor(name);
                assertNotNull(t, name);
                assertEquals(SHARED.get(i), t.dtype(), name);
                assertArrayEquals(shapes[i], t.shape(), name);
                assertArrayEquals(bytes.get(name), t.data().toArray(ValueLayout.JAVA_BYTE), name);
            }
        }
    }

    @Test
    void weWriteDjlReads() throws IOException {
        Random r = new Random(7);
        long[][] shapes = shapes();
        Path p = dir.resolve("viper.safetensors");
        try (Arena arena = Arena.ofConfined()) {
            Checkpoint.Builder b = Checkpoint.builder("m").metadata("viper.iteration", "5");
            for (int i = 0; i < SHARED.size(); i++) {
                byte[] data = randomBytes(r, SHARED.get(i), shapes[i]);
                MemorySegment seg = arena.allocate(Math.max(data.length, 1)).asSlice(0, data.length);
                MemorySegment.copy(MemorySegment.ofArray(data), 0, seg, 0, data.length);
                b.add("t" + i, SHARED.get(i), shapes[i], seg);
            }
            Checkpoint cp = b.build();
            SafetensorsWriter.write(p, cp);

            NDList decoded = NDList.decode(PassthroughNDManager.INSTANCE, Files.readAllBytes(p));
            assertEquals(cp.tensors().size(), decoded.size(), "DJL skips __metadata__ and reads every tensor");
            for (Tensor t : cp.tensors()) {
                NDArray a = decoded.get(t.name());
                assertNotNull(a, t.name());
                assertEquals(DJL_TYPES.get(t.dtype()), a.getDataType(), t.name());
                assertArrayEquals(t.shape(), a.getShape().getShape(), t.name());
                assertArrayEquals(t.data().toArray(ValueLayout.JAVA_BYTE), bytesOf(a), t.name());
            }
        }
    }
}
