package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.testing.TestData;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/** {@code viper inspect}, run in-process through {@link ViperMain#execute}. */
class InspectCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    @TempDir
    Path dir;

    record Run(int exit, String out, String err) {
        List<String> errLines() {
            return err.lines().toList();
        }
    }

    static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exit = ViperMain.execute(args, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Run(exit, out.toString(), err.toString());
    }

    static List<Path> safetensorsIn(Path folder) {
        try (Stream<Path> s = Files.list(folder)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".safetensors"))
                    .sorted()
                    .toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @TestFactory
    Stream<DynamicTest> jsonStatsReproduceTheExpectedFiles() {
        List<Path> files = safetensorsIn(TestData.root().resolve("safetensors"));
        assertFalse(files.isEmpty());
        return files.stream()
                .map(file -> dynamicTest(file.getFileName().toString(), () -> {
                    Run r = run("inspect", "--json", "--stats", file.toString());
                    assertEquals(0, r.exit(), r.err());
                    assertEquals("", r.err());
                    JsonNode actual = JSON.readTree(r.out()); // exactly one JSON value, nothing after it
                    assertTrue(actual.isObject());
                    assertEquals(file.toString(), actual.get("file").textValue(), "file is the path as given");
                    ((ObjectNode) actual).remove("file");
                    JsonNode expected = JSON.readTree(file.resolveSibling(file.getFileName() + ".expected.json")
                            .toFile());
                    assertJsonEquals(expected, actual, "$");
                    assertEquals(
                            List.of("header_bytes", "data_bytes", "metadata", "tensors"),
                            fieldNames(actual),
                            "field order");
                }));
    }

    @Test
    void withoutStatsThereAreNoStatFields() throws IOException {
        Path file = TestData.root().resolve("safetensors").resolve("small_f32.safetensors");
        Run r = run("inspect", "--json", file.toString());
        assertEquals(0, r.exit(), r.err());
        JsonNode tensors = JSON.readTree(r.out()).get("tensors");
        assertEquals(2, tensors.size());
        for (JsonNode t : tensors) {
            assertEquals(List.of("name", "dtype", "shape", "offset", "length"), fieldNames(t));
        }
    }

    @TestFactory
    Stream<DynamicTest> badFilesExitTwoWithOneLine() {
        List<Path> files = safetensorsIn(TestData.root().resolve("safetensors").resolve("bad"));
        assertFalse(files.isEmpty());
        return files.stream()
                .map(file -> dynamicTest(file.getFileName().toString(), () -> {
                    for (String[] args : List.of(
                            new String[] {"inspect", file.toString()},
                            new String[] {"inspect", "--json", "--stats", file.toString()})) {
                        Run r = run(args);
                        assertEquals(2, r.exit(), r.err());
                        assertEquals(1, r.errLines().size(), "exactly one line: " + r.err());
                        assertTrue(r.err().startsWith("viper: " + file + ": "), r.err());
                        assertTrue(
                                r.err().length() > ("viper: " + file + ": ").length() + 5,
                                "names a reason: " + r.err());
                        assertEquals("", r.out());
                    }
                }));
    }

    @Test
    void missingFileExitsTwo() {
        Path missing = dir.resolve("missing.safetensors");
        Run r = run("inspect", missing.toString());
        assertEquals(2, r.exit());
        assertEquals(List.of("viper: " + missing + ": no such file"), r.errLines());
        assertEquals("", r.out());
    }

    @Test
    void directoryExitsTwo() {
        Run r = run("inspect", dir.toString());
        assertEquals(2, r.exit());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().startsWith("viper: " + dir + ": "), r.err());
    }

    @Test
    void badFlagsAreUsageErrors() {
        Run unknown = run("inspect", "--bogus", "x.safetensors");
        assertEquals(2, unknown.exit());
        assertEquals(List.of("viper: Unknown option: '--bogus' (see 'viper inspect --help')"), unknown.errLines());
        Run none = run("inspect");
        assertEquals(2, none.exit());
        assertTrue(none.err().startsWith("viper: Missing required parameter: 'FILE'"), none.err());
    }

    @Test
    void helpAndVersion() {
        Run help = run("inspect", "--help");
        assertEquals(0, help.exit());
        assertTrue(help.out().contains("--stats"), help.out());
        Run top = run("--help");
        assertEquals(0, top.exit());
        assertTrue(top.out().contains("inspect"), top.out());
        Run version = run("--version");
        assertEquals(0, version.exit());
        assertTrue(version.out().startsWith("viper "), version.out());
    }

    @Test
    void tableShowsTensorsAndMetadata() {
        Path file = TestData.root().resolve("safetensors").resolve("with_metadata.safetensors");
        Run r = run("inspect", file.toString());
        assertEquals(0, r.exit(), r.err());
        List<String> lines = r.out().lines().toList();
        assertEquals(file + ": 1 tensor, 128 data bytes (128 B), header 144 bytes", lines.getFirst());
        assertTrue(lines.contains("NAME  DTYPE  SHAPE   SIZE"), r.out());
        assertTrue(lines.contains("w     F16    [8, 8]  128 B"), r.out());
        assertTrue(lines.contains("metadata:"), r.out());
        assertTrue(lines.contains("  iteration = 120"), r.out());
        assertTrue(lines.contains("  loss = 0.4375"), r.out());

        Run stats = run(
                "inspect",
                "--stats",
                TestData.root()
                        .resolve("safetensors")
                        .resolve("scalar_and_empty.safetensors")
                        .toString());
        assertEquals(0, stats.exit(), stats.err());
        assertTrue(stats.out().contains("MIN"), stats.out());
        assertTrue(stats.out().lines().anyMatch(l -> l.startsWith("scalar") && l.contains("-3.32478")), stats.out());
        assertTrue(
                stats.out().lines().anyMatch(l -> l.startsWith("empty") && l.matches(".*-\\s+-\\s+-$")), stats.out());
        assertTrue(stats.out().contains("metadata: none"), stats.out());
    }

    @Test
    void humanSizes() {
        assertEquals("0 B", InspectCommand.humanBytes(0));
        assertEquals("1023 B", InspectCommand.humanBytes(1023));
        assertEquals("1.50 KiB", InspectCommand.humanBytes(1536));
        assertEquals("2.50 GiB", InspectCommand.humanBytes(2_684_354_560L));
        assertEquals("100 MiB", InspectCommand.humanBytes(100L << 20));
    }

    private static List<String> fieldNames(JsonNode node) {
        List<String> names = new ArrayList<>();
        node.fieldNames().forEachRemaining(names::add);
        return names;
    }

    /** JSON values equal: numbers by value (mean within 1e-9 relative), objects ignoring key order. */
    static void assertJsonEquals(JsonNode expected, JsonNode actual, String path) {
        if (expected.isNumber()) {
            assertTrue(actual.isNumber(), path + ": expected a number, got " + actual);
            double e = expected.doubleValue();
            double a = actual.doubleValue();
            if (path.endsWith(".mean")) {
                assertEquals(e, a, 1e-9 * Math.max(1.0, Math.abs(e)), path);
            } else if (expected.isIntegralNumber() && actual.isIntegralNumber()) {
                assertEquals(expected.longValue(), actual.longValue(), path);
            } else {
                assertEquals(e, a, 0.0, path);
            }
        } else if (expected.isObject()) {
            assertTrue(actual.isObject(), path + ": expected an object, got " + actual);
            assertEquals(
                    fieldNames(expected).stream().sorted().toList(),
                    fieldNames(actual).stream().sorted().toList(),
                    path + " keys");
            for (Iterator<String> it = expected.fieldNames(); it.hasNext(); ) {
                String k = it.next();
                assertJsonEquals(expected.get(k), actual.get(k), path + "." + k);
            }
        } else if (expected.isArray()) {
            assertTrue(actual.isArray(), path + ": expected an array, got " + actual);
            assertEquals(expected.size(), actual.size(), path + " size");
            for (int i = 0; i < expected.size(); i++) {
                assertJsonEquals(expected.get(i), actual.get(i), path + "[" + i + "]");
            }
        } else {
            assertEquals(expected, actual, path);
        }
    }
}
