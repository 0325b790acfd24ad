package io.viper.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Random checkpoints (every dtype, scalars, zero-size dimensions, unicode names and metadata) written then read back
 * must be equal. Fixed seeds: a failure names its seed and replays exactly.
 */
class SafetensorsRoundTripPropertyTest {
    private static final int CASES = 300;
    private static final String[] PIECES = {
        "a",
        "b",
        "z",
        "0",
        "9",
        ".",
        "_",
        "-",
        "/",
        " ",
        "é",
        "ß",
        "中文",
        "Ω",
        "😀",
        "𝔘",
        "\"",
        "\\",
        "'",
        "\n",
        "\t",
        "\u0000",
        "\u001f",
        "\u007f",
        "\u2028",
        "{",
        "}",
        "[",
        ":",
        ",",
        "__metadata__"
    };

    @TempDir
    Path dir;

    static String randomString(Random r, int maxPieces) {
        StringBuilder b = new StringBuilder();
        int n = r.nextInt(maxPieces + 1);
        for (int i = 0; i < n; i++) {
            b.append(PIECES[r.nextInt(PIECES.length)]);
        }
        return b.toString();
    }

    @SuppressWarnings("EnumOrdinal") // a random dtype: any constant will do
    static Checkpoint randomCheckpoint(Random r, Arena arena) {
        Checkpoint.Builder builder =
                Checkpoint.builder("model-" + r.nextInt(10)).version(r.nextInt(1000));
        Set<String> names = new HashSet<>();
        int count = r.nextInt(7);
        while (names.size() < count) {
            String name = randomString(r, 4);
            if (name.equals(SafetensorsHeader.METADATA_KEY) || !names.add(name)) {
                continue;
            }
            DType dtype = DType.values()[r.nextInt(DType.values().length)];
            long[] shape = new long[r.nextInt(5)];
            for (int d = 0; d < shape.length; d++) {
                shape[d] = r.nextInt(8) == 0 ? 0 : 1 + r.nextInt(5);
            }
            long bytes = TensorInfo.byteSize(dtype, shape);
            MemorySegment seg = arena.allocate(Math.max(bytes, 1)).asSlice(0, bytes);
            byte[] random = new byte[(int) bytes];
            r.nextBytes(random);
            MemorySegment.copy(MemorySegment.ofArray(random), 0, seg, 0, bytes);
            builder.add(name, dtype, shape, seg);
        }
        int meta = r.nextInt(5);
        for (int i = 0; i < meta; i++) {
            builder.metadata(randomString(r, 3), randomString(r, 12));
        }
        return builder.build();
    }

    @Test
    void randomCheckpointsSurviveWriteThenRead() throws IOException {
        for (int seed = 0; seed < CASES; seed++) {
            Random r = new Random(seed);
            try (Arena arena = Arena.ofConfined()) {
                Checkpoint cp = randomCheckpoint(r, arena);
                Path p = dir.resolve("case-" + seed + ".safetensors");
                long size = SafetensorsWriter.write(p, cp);
                String at = "seed " + seed + ": ";
                assertEquals(Files.size(p), size, at + "size");
                try (SafetensorsFile f = SafetensorsFile.open(p)) {
                    assertEquals(0, f.headerBytes() % 8, at + "header padding");
                    assertEquals(cp.totalBytes(), f.dataBytes(), at + "data bytes");
                    assertEquals(
                            List.copyOf(cp.metadata().entrySet()),
                            List.copyOf(f.metadata().entrySet()),
                            at + "metadata in order");
                    assertEquals(cp.tensors().size(), f.tensors().size(), at + "tensor count");
                    for (int i = 0; i < cp.tensors().size(); i++) {
                        Tensor want = cp.tensors().get(i);
                        Tensor got = f.tensors().get(i);
                        assertEquals(want.info(), got.info(), at + "info of tensor " + i);
                        assertEquals(-1L, want.data().mismatch(got.data()), at + "bytes of " + want.name());
                    }
                    if (seed % 4 == 0) { // each write forces to disk: check the rewrite on a quarter of the cases
                        // Writing what was read gives the same file, byte for byte.
                        Path again = dir.resolve("again-" + seed + ".safetensors");
                        SafetensorsWriter.write(again, f.checkpoint(cp.model(), cp.version()));
                        assertArrayEquals(
                                Files.readAllBytes(p), Files.readAllBytes(again), at + "rewrite is identical");
                    }
                }
                Files.delete(p);
                Files.deleteIfExists(dir.resolve("again-" + seed + ".safetensors"));
            }
        }
    }

    /** Headers written by hand in a random key order (and unpadded) still read in data order. */
    @Test
    void anyJsonOrderReadsInDataOrder() throws IOException {
        ObjectMapper json = new ObjectMapper();
        for (int seed = 0; seed < 100; seed++) {
            Random r = new Random(1000 + seed);
            try (Arena arena = Arena.ofConfined()) {
                Checkpoint cp = randomCheckpoint(r, arena);
                List<Map.Entry<String, Object>> entries = new ArrayList<>();
                for (Tensor t : cp.tensors()) {
                    Map<String, Object> e = new LinkedHashMap<>();
                    e.put("data_offsets", List.of(t.info().offset(), t.info().offset() + t.byteSize()));
                    e.put("shape", t.shape());
                    e.put("dtype", t.dtype().name());
                    entries.add(Map.entry(t.name(), e));
                }
                if (!cp.metadata().isEmpty()) {
                    entries.add(Map.entry(SafetensorsHeader.METADATA_KEY, cp.metadata()));
                }
                Collections.shuffle(entries, r);
                Map<String, Object> header = new LinkedHashMap<>();
                entries.forEach(e -> header.put(e.getKey(), e.getValue()));
                byte[] head = json.writeValueAsBytes(header);
                ByteBuffer file = ByteBuffer.allocate((int) (8 + head.length + cp.totalBytes()))
                        .order(ByteOrder.LITTLE_ENDIAN);
                file.putLong(head.length).put(head);
                for (Tensor t : cp.tensors()) {
                    file.put(t.data().asByteBuffer());
                }
                Path p = dir.resolve("shuffled-" + seed + ".safetensors");
                Files.write(p, file.array());
                try (SafetensorsFile f = SafetensorsFile.open(p)) {
                    String at = "seed " + (1000 + seed) + " header " + new String(head, StandardCharsets.UTF_8) + ": ";
                    assertEquals(
                            cp.tensors().stream()
                                    .filter(t -> t.byteSize() > 0)
                                    .map(Tensor::name)
                                    .toList(),
                            f.tensors().stream()
                                    .filter(t -> t.byteSize() > 0)
                                    .map(Tensor::name)
                                    .toList(),
                            at + "data order");
                    for (Tensor want : cp.tensors()) {
                        Tensor got = f.tensor(want.name());
                        assertEquals(want.info(), got.info(), at + want.name());
                        assertEquals(-1L, want.data().mismatch(got.data()), at + "bytes of " + want.name());
                    }
                    assertEquals(cp.metadata(), f.metadata(), at + "metadata");
                }
            }
        }
    }
}
