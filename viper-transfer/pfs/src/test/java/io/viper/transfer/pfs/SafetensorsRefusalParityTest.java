package io.viper.transfer.pfs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import io.viper.errors.ViperFormatException;
import io.viper.format.SafetensorsFile;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import io.viper.testing.TestData;
import io.viper.transfer.pfs.internal.FileTransportClient;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code viper inspect} and {@code viper publish} (which open files with {@link SafetensorsFile}) and a consumer
 * reading the PFS (through {@link FileTransportClient}) refuse exactly the same files with exactly the same one-line
 * reason, because both use viper-core's one parser.
 */
class SafetensorsRefusalParityTest {
    @TempDir
    Path root;

    /** A manifest the bad files are read against: the parser refuses them before any comparison. */
    private static final Manifest MANIFEST = new Manifest(
            "bad",
            1,
            "test",
            0,
            new LinkedHashMap<>(),
            List.of(new TensorEntry(TensorInfo.of("x", DType.U8, new long[] {1}, 0), new ContentHash(0, 0))),
            List.of());

    /** The shared test data's bad files ({@code viper-core}'s {@code SafetensorsTestdataTest} reads the same ones). */
    @TestFactory
    Stream<DynamicTest> sharedBadFilesAreRefusedAlikeByInspectAndByThePfsConsumer() {
        List<Path> files =
                TestData.safetensorsIn(TestData.root().resolve("safetensors").resolve("bad"));
        assertFalse(files.isEmpty(), "no bad test files");
        return files.stream()
                .map(f -> dynamicTest(f.getFileName().toString(), () -> assertSameRefusal(Files.readAllBytes(f), "")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("handMadeBadFiles")
    void handMadeBadFilesAreRefusedAlikeByInspectAndByThePfsConsumer(String what, byte[] file, String reason)
            throws IOException {
        assertSameRefusal(file, reason);
    }

    static Stream<Arguments> handMadeBadFiles() {
        return Stream.of(
                bad("not json", "{\"a\":", 0, "not valid JSON"),
                bad("not an object", "[1,2]", 0, "not a JSON object"),
                bad("leading space", " {}", 0, "not a JSON object"),
                bad(
                        "unknown dtype",
                        "{\"a\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[0,8]}}",
                        8,
                        "unknown dtype C64"),
                bad("missing dtype", "{\"a\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1, "missing dtype"),
                bad(
                        "negative shape",
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,1]}}",
                        1,
                        "negative dimension"),
                bad(
                        "fractional shape",
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,1]}}",
                        1,
                        "not a list of integers"),
                bad(
                        "three offsets",
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}",
                        1,
                        "not two non-negative integers"),
                bad(
                        "length mismatch",
                        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
                        4,
                        "does not match"),
                bad(
                        "reversed offsets",
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}",
                        4,
                        "end before they begin"),
                bad("gap", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}", 3, "hole of 1 bytes"),
                bad(
                        "overlap",
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                                + "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}",
                        3,
                        "overlap"),
                bad(
                        "truncated data",
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                        3,
                        "truncated"),
                bad(
                        "trailing data",
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                        5,
                        "trailing bytes"),
                bad(
                        "duplicate tensor",
                        "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                                + "\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                        1,
                        "duplicate tensor name 'a'"),
                bad("metadata not strings", "{\"__metadata__\":{\"k\":1}}", 0, "not a string"),
                bad("metadata not an object", "{\"__metadata__\":[]}", 0, "not an object of strings"),
                bad("tensor not an object", "{\"a\":3}", 0, "entry is a number"),
                bad(
                        "shape overflow",
                        "{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}",
                        8,
                        "overflows 64 bits"),
                Arguments.of("empty file", new byte[0], "too short"),
                Arguments.of("five bytes", new byte[5], "too short"),
                Arguments.of("huge header length", prefix(200_000_000L, 16), "exceeds the limit"),
                Arguments.of("negative header length", prefix(-1L, 16), "exceeds the limit"),
                Arguments.of("header length past the end", prefix(100, 16), "past the end of the file"),
                Arguments.of("empty header", prefix(0, 8), "header is empty"));
    }

    private static Arguments bad(String what, String json, int dataBytes, String reason) {
        byte[] h = json.getBytes(StandardCharsets.UTF_8);
        byte[] file = ByteBuffer.allocate(8 + h.length + dataBytes)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putLong(h.length)
                .put(h)
                .array();
        return Arguments.of(what, file, reason);
    }

    private static byte[] prefix(long headerLength, int fileBytes) {
        return ByteBuffer.allocate(fileBytes)
                .order(ByteOrder.LITTLE_ENDIAN)
                .putLong(0, headerLength)
                .array();
    }

    /**
     * Puts {@code bytes} where the PFS repository keeps version 1 of a model, then checks that inspect's parser, a PFS
     * read and a PFS mapping all refuse it with the same message, one line naming the file, whose reason contains
     * {@code reason} (any, when empty).
     */
    private void assertSameRefusal(byte[] bytes, String reason) throws IOException {
        Path file = Files.createDirectories(root.resolve("bad").resolve("1")).resolve("model.safetensors");
        Files.write(file, bytes);
        Location location = new Location(file.toUri(), Tier.PFS);

        ViperFormatException inspect = assertThrows(
                ViperFormatException.class, () -> SafetensorsFile.open(file).close());
        assertEquals(file.toString(), inspect.source());
        assertFalse(inspect.getMessage().contains("\n"), "one line: " + inspect.getMessage());
        assertTrue(
                inspect.problem().toLowerCase(Locale.ROOT).contains(reason.toLowerCase(Locale.ROOT)),
                "expected '" + reason + "' in: " + inspect.problem());
        try (FileTransportClient client = new FileTransportClient();
                Arena arena = Arena.ofConfined()) {
            ViperFormatException read = assertThrows(
                    ViperFormatException.class,
                    () -> client.read(MANIFEST, location, List.of(new ByteRange(0, 1, 0)), arena.allocate(1)));
            assertEquals(inspect.getMessage(), read.getMessage(), "read refuses it as inspect does");
            ViperFormatException map = assertThrows(ViperFormatException.class, () -> client.map(MANIFEST, location));
            assertEquals(inspect.getMessage(), map.getMessage(), "map refuses it as inspect does");
        }
    }
}
