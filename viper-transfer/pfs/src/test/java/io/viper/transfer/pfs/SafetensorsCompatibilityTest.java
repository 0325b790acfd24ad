package io.viper.transfer.pfs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.util.passthrough.PassthroughNDManager;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.ViperConfig;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import io.viper.testing.TestStagedCheckpoint;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The files the repository writes are standard safetensors: read independently with DJL's pure-Java safetensors
 * decoder, and parsed by hand against the format's rules.
 */
class SafetensorsCompatibilityTest {
    @TempDir
    Path root;

    private record Spec(String name, DType dtype, long[] shape, DataType djl) {}

    private static final List<Spec> SPECS = List.of(
            new Spec("embed.weight", DType.F32, new long[] {4, 3}, DataType.FLOAT32),
            new Spec("head.bias", DType.F64, new long[] {2}, DataType.FLOAT64),
            new Spec("half", DType.F16, new long[] {5}, DataType.FLOAT16),
            new Spec("steps", DType.I64, new long[] {1, 1, 2}, DataType.INT64),
            new Spec("ids", DType.I32, new long[] {3}, DataType.INT32),
            new Spec("mask", DType.BOOL, new long[] {7}, DataType.BOOLEAN),
            new Spec("bytes", DType.U8, new long[] {9}, DataType.UINT8),
            new Spec("scalar", DType.F32, new long[] {}, DataType.FLOAT32));

    /** A staged checkpoint of the tensors above, with pseudo-random bytes and some metadata. */
    private static final class MixedStaged implements StagedCheckpoint, AutoCloseable {
        private final Arena arena = Arena.ofShared();
        private final Manifest manifest;
        private final MemorySegment data;

        MixedStaged() {
            List<TensorEntry> entries = new ArrayList<>();
            long offset = 0;
            for (Spec s : SPECS) {
                TensorInfo info = TensorInfo.of(s.name(), s.dtype(), s.shape(), offset);
                entries.add(new TensorEntry(info, new ContentHash(0, entries.size())));
                offset += info.length();
            }
            LinkedHashMap<String, String> meta = new LinkedHashMap<>();
            meta.put("viper.iteration", "700");
            meta.put("viper.loss", "0.31");
            manifest = new Manifest("mixed", 7, "test", 1, meta, entries, List.of());
            data = arena.allocate(offset, 8);
            TestStagedCheckpoint.fill(data, 99);
            for (long i = 0; i < 7; i++) { // BOOL bytes must be 0 or 1
                long at = manifest.tensor("mask").info().offset() + i;
                data.set(ValueLayout.JAVA_BYTE, at, (byte) (data.get(ValueLayout.JAVA_BYTE, at) & 1));
            }
        }

        @Override
        public String model() {
            return manifest.model();
        }

        @Override
        public long version() {
            return manifest.version();
        }

        @Override
        public Manifest manifest() {
            return manifest;
        }

        @Override
        public MemorySegment data() {
            return data.asReadOnly();
        }

        @Override
        public ReadLease tryLease() {
            return () -> {};
        }

        @Override
        public void close() {
            arena.close();
        }
    }

    private Path storeMixed(MixedStaged staged) {
        try (CheckpointRepository repo = new PfsRepositoryProvider().open(root.toUri(), ViperConfig.defaults())) {
            Location loc = repo.store(staged.manifest(), staged);
            return Path.of(loc.uri());
        }
    }

    @Test
    void djlReadsTheFile() throws IOException {
        try (MixedStaged staged = new MixedStaged()) {
            Path file = storeMixed(staged);
            NDList list = NDList.decode(PassthroughNDManager.INSTANCE, Files.readAllBytes(file));
            assertEquals(SPECS.size(), list.size());
            for (Spec s : SPECS) {
                NDArray a = list.get(s.name());
                assertEquals(s.djl(), a.getDataType(), s.name());
                assertArrayEquals(s.shape(), a.getShape().getShape(), s.name());
                TensorInfo info = staged.manifest().tensor(s.name()).info();
                byte[] expected =
                        staged.data().asSlice(info.offset(), info.length()).toArray(ValueLayout.JAVA_BYTE);
                assertArrayEquals(expected, a.toByteArray(), s.name());
            }
        }
    }

    @Test
    void theFileFollowsTheFormatByHand() throws IOException {
        try (MixedStaged staged = new MixedStaged()) {
            Path file = storeMixed(staged);
            byte[] bytes = Files.readAllBytes(file);
            long n = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getLong();
            assertEquals(0, n % 8, "header length a multiple of 8");
            String header = new String(bytes, 8, (int) n, StandardCharsets.UTF_8);
            assertTrue(header.startsWith("{"), header);
            assertTrue(header.stripTrailing().endsWith("}")
                    && header.substring(header.stripTrailing().length()).isBlank());
            JsonNode json = new ObjectMapper().readTree(header);
            assertEquals(
                    Map.of("viper.iteration", "700", "viper.loss", "0.31"),
                    new ObjectMapper().convertValue(json.get("__metadata__"), Map.class));
            Iterator<String> names = json.fieldNames();
            assertEquals("__metadata__", names.next());
            long expectedBegin = 0;
            for (Spec s : SPECS) {
                assertEquals(s.name(), names.next(), "tensors in data order");
                JsonNode t = json.get(s.name());
                assertEquals(s.dtype().name(), t.get("dtype").asText());
                long[] shape = new long[t.get("shape").size()];
                for (int i = 0; i < shape.length; i++) {
                    shape[i] = t.get("shape").get(i).asLong();
                }
                assertArrayEquals(s.shape(), shape);
                long begin = t.get("data_offsets").get(0).asLong();
                long end = t.get("data_offsets").get(1).asLong();
                assertEquals(expectedBegin, begin);
                assertEquals(TensorInfo.byteSize(s.dtype(), s.shape()), end - begin);
                expectedBegin = end;
            }
            assertEquals(bytes.length - 8 - n, expectedBegin, "the data section ends at the end of the file");
            MemorySegment dataSection = MemorySegment.ofArray(bytes).asSlice(8 + n);
            assertEquals(-1, staged.data().mismatch(dataSection), "data section = the staged bytes");
        }
    }
}
