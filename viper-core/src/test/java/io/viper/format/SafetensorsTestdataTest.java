package io.viper.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.tensor.Tensor;
import io.viper.testing.TestData;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** Reads the shared test files and checks them against their expected JSON and refusal reasons. */
class SafetensorsTestdataTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Per file in {@code bad/}: a phrase the refusal must contain (lower case). */
    static final Map<String, String> BAD_REASONS = Map.ofEntries(
            Map.entry("header_len_past_eof", "past the end of the file"),
            Map.entry("huge_header_len", "header length 1099511627776 exceeds the limit of 100000000 bytes"),
            Map.entry("too_short", "too short"),
            Map.entry("not_json", "not valid json"),
            Map.entry("not_object", "not a json object"),
            Map.entry("truncated_data", "truncated"),
            Map.entry("overlap", "overlap"),
            Map.entry("hole", "hole"),
            Map.entry("shape_mismatch", "does not match"),
            Map.entry("unknown_dtype", "unknown dtype f128"),
            Map.entry("negative_dim", "negative dimension"),
            Map.entry("missing_offsets", "missing data_offsets"),
            Map.entry("trailing_bytes", "trailing bytes"),
            Map.entry("metadata_not_strings", "not a string"),
            Map.entry("shape_overflow", "overflows 64 bits"));

    /** Bad files whose problem concerns one tensor: the message must name it. */
    static final Map<String, String> BAD_TENSOR = Map.of(
            "truncated_data",
            "x",
            "overlap",
            "y",
            "hole",
            "y",
            "shape_mismatch",
            "x",
            "unknown_dtype",
            "x",
            "negative_dim",
            "x",
            "missing_offsets",
            "x",
            "shape_overflow",
            "x");

    @TestFactory
    Stream<DynamicTest> goodFilesMatchTheirExpectedJson() {
        Path dir = TestData.root().resolve("safetensors");
        List<Path> files = TestData.safetensorsIn(dir);
        assertFalse(files.isEmpty(), "no test files in " + dir);
        return files.stream().map(file -> dynamicTest(file.getFileName().toString(), () -> checkAgainstExpected(file)));
    }

    private static void checkAgainstExpected(Path file) throws IOException {
        JsonNode expected = JSON.readTree(
                file.resolveSibling(file.getFileName() + ".expected.json").toFile());
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            assertEquals(expected.get("header_bytes").longValue(), f.headerBytes(), "header_bytes");
            assertEquals(expected.get("data_bytes").longValue(), f.dataBytes(), "data_bytes");
            assertEquals(Files.size(file), f.fileBytes(), "file size");
            Map<String, String> meta = new LinkedHashMap<>();
            expected.get("metadata")
                    .properties()
                    .forEach(e -> meta.put(e.getKey(), e.getValue().textValue()));
            assertEquals(meta, f.metadata(), "metadata");
            JsonNode tensors = expected.get("tensors");
            assertEquals(tensors.size(), f.tensors().size(), "tensor count");
            for (int i = 0; i < tensors.size(); i++) {
                JsonNode e = tensors.get(i);
                Tensor t = f.tensors().get(i);
                String name = e.get("name").textValue();
                assertEquals(name, t.name(), "tensor " + i + " name (data order)");
                assertEquals(e.get("dtype").textValue(), t.dtype().safetensorsName(), name + " dtype");
                assertEquals(e.get("shape").toString(), JSON.writeValueAsString(t.shape()), name + " shape");
                assertEquals(e.get("offset").longValue(), t.info().offset(), name + " offset");
                assertEquals(e.get("length").longValue(), t.byteSize(), name + " length");
                assertEquals(t, f.tensor(name), name + " by name");
                Optional<TensorStats> stats = TensorStats.of(t);
                if (e.has("min")) {
                    TensorStats s = stats.orElseThrow(() -> new AssertionError(name + ": no stats"));
                    assertEquals(e.get("min").doubleValue(), s.min(), 0.0, name + " min");
                    assertEquals(e.get("max").doubleValue(), s.max(), 0.0, name + " max");
                    double mean = e.get("mean").doubleValue();
                    assertEquals(mean, s.mean(), 1e-9 * Math.max(1.0, Math.abs(mean)), name + " mean");
                } else {
                    assertTrue(stats.isEmpty(), name + " has no elements, so no stats");
                }
            }
        }
    }

    @TestFactory
    Stream<DynamicTest> badFilesAreRefusedWithTheRightReason() {
        Path dir = TestData.root().resolve("safetensors").resolve("bad");
        List<Path> files = TestData.safetensorsIn(dir);
        TreeSet<String> names = new TreeSet<>();
        files.forEach(p -> names.add(stem(p)));
        assertEquals(
                new TreeSet<>(BAD_REASONS.keySet()), names, "every bad file has an expected reason and vice versa");
        return files.stream()
                .map(file -> dynamicTest(stem(file), () -> {
                    ViperFormatException e = assertThrows(
                            ViperFormatException.class,
                            () -> SafetensorsFile.open(file).close());
                    assertEquals(ViperException.Reason.FORMAT, e.reason());
                    assertEquals(file.toString(), e.source());
                    assertEquals(file + ": " + e.problem(), e.getMessage());
                    String problem = e.problem().toLowerCase(Locale.ROOT);
                    assertTrue(
                            problem.contains(BAD_REASONS.get(stem(file))),
                            "reason for " + stem(file) + ": " + e.problem());
                    assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
                    String tensor = BAD_TENSOR.get(stem(file));
                    if (tensor != null) {
                        assertTrue(
                                e.problem().startsWith("tensor '" + tensor + "': "),
                                "names the tensor: " + e.problem());
                    }
                }));
    }

    @Test
    void reasonsAreDistinct() {
        // Each keyword must identify its case: no keyword may appear in the message of another bad file.
        Path dir = TestData.root().resolve("safetensors").resolve("bad");
        for (Path file : TestData.safetensorsIn(dir)) {
            String problem = assertThrows(
                            ViperFormatException.class,
                            () -> SafetensorsFile.open(file).close())
                    .problem()
                    .toLowerCase(Locale.ROOT);
            BAD_REASONS.forEach((other, keyword) -> {
                if (!other.equals(stem(file))) {
                    assertFalse(
                            problem.contains(keyword), stem(file) + " message also matches " + other + ": " + problem);
                }
            });
        }
    }

    private static String stem(Path p) {
        String n = p.getFileName().toString();
        return n.substring(0, n.length() - ".safetensors".length());
    }
}
