package io.viper.transfer.pfs.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import io.viper.hash.ContentHash;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

class SafetensorsHeaderTest {
    private static final String SOURCE = "/pfs/nt3/7/model.safetensors";

    private static Manifest manifest(Map<String, String> metadata, TensorInfo... tensors) {
        List<TensorEntry> entries = new ArrayList<>();
        for (TensorInfo t : tensors) {
            entries.add(new TensorEntry(t, new ContentHash(1, entries.size())));
        }
        return new Manifest("nt3", 7, "test", 0, new LinkedHashMap<>(metadata), entries, List.of());
    }

    private static Manifest sample() {
        return manifest(Map.of("viper.iteration", "700", "quote\"key", "line\nbreak"),
                TensorInfo.of("dense.weight", DType.F32, new long[] {2, 3}, 0),
                TensorInfo.of("dense.bias", DType.BF16, new long[] {3}, 24),
                TensorInfo.of("empty", DType.I64, new long[] {0, 4}, 30),
                TensorInfo.of("step", DType.I64, new long[] {}, 30));
    }

    /** A file: the writer's head for {@code m} followed by {@code m.totalBytes()} data bytes. */
    private static MemorySegment fileOf(Manifest m) {
        byte[] head = SafetensorsHeaderWriter.encode(m);
        byte[] all = new byte[head.length + (int) m.totalBytes()];
        System.arraycopy(head, 0, all, 0, head.length);
        return MemorySegment.ofArray(all);
    }

    /** A file with a hand-written header and {@code dataBytes} zero data bytes. */
    private static MemorySegment file(String json, int dataBytes) {
        byte[] h = json.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        return MemorySegment.ofArray(b.array());
    }

    @Test
    void writerOutputParsesBackToTheManifest() {
        Manifest m = sample();
        MemorySegment f = fileOf(m);
        SafetensorsHeaderReader.Header h = SafetensorsHeaderReader.parse(f, SOURCE);
        assertEquals(m.tensors().stream().map(TensorEntry::info).toList(), h.tensors());
        assertEquals(m.metadata(), h.metadata());
        assertEquals(0, h.dataStart() % 8, "data section 8-aligned");
        assertEquals(m.totalBytes(), h.dataLength());
        h.checkMatches(m, SOURCE);

        byte[] head = SafetensorsHeaderWriter.encode(m);
        long n = ByteBuffer.wrap(head).order(ByteOrder.LITTLE_ENDIAN).getLong();
        assertEquals(head.length - 8, n);
        String json = new String(head, 8, (int) n, StandardCharsets.UTF_8);
        assertTrue(json.startsWith("{\"__metadata__\":{"), json);
        assertTrue(json.indexOf("dense.weight") < json.indexOf("dense.bias") && json.indexOf("dense.bias") < json.indexOf("\"step\""),
                "tensors in data order: " + json);
        assertTrue(json.contains("\"data_offsets\":[0,24]"), json);
    }

    @Test
    void emptyManifestGivesAValidFile() {
        Manifest m = manifest(Map.of());
        SafetensorsHeaderReader.Header h = SafetensorsHeaderReader.parse(fileOf(m), SOURCE);
        assertEquals(List.of(), h.tensors());
        assertEquals(0, h.dataLength());
    }

    @Test
    void aTensorCalledMetadataCannotBeWritten() {
        Manifest m = manifest(Map.of(), TensorInfo.of("__metadata__", DType.U8, new long[] {1}, 0));
        assertThrows(ViperConfigException.class, () -> SafetensorsHeaderWriter.encode(m));
    }

    @Test
    void headerThatDoesNotMatchTheManifestIsRefused() {
        Manifest m = sample();
        SafetensorsHeaderReader.Header h = SafetensorsHeaderReader.parse(fileOf(m), SOURCE);
        Manifest otherShape = manifest(Map.of(),
                TensorInfo.of("dense.weight", DType.F32, new long[] {3, 2}, 0),
                TensorInfo.of("dense.bias", DType.BF16, new long[] {3}, 24),
                TensorInfo.of("empty", DType.I64, new long[] {0, 4}, 30),
                TensorInfo.of("step", DType.I64, new long[] {}, 30));
        ViperFormatException e = assertThrows(ViperFormatException.class, () -> h.checkMatches(otherShape, SOURCE));
        assertTrue(e.getMessage().startsWith(SOURCE + ": ") && e.getMessage().contains("dense.weight"), e.getMessage());
        Manifest fewer = manifest(Map.of(), TensorInfo.of("dense.weight", DType.F32, new long[] {2, 3}, 0));
        assertThrows(ViperFormatException.class, () -> h.checkMatches(fewer, SOURCE));
        Manifest renamed = manifest(Map.of(), TensorInfo.of("w", DType.F32, new long[] {2, 3}, 0));
        assertThrows(ViperFormatException.class, () -> h.checkMatches(renamed, SOURCE));
    }

    @Test
    void tensorsMayAppearInAnyOrderInTheJson() {
        MemorySegment f = file("{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[3,5]},"
                + "\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]},\"__metadata__\":{\"k\":\"v\"}}", 5);
        SafetensorsHeaderReader.Header h = SafetensorsHeaderReader.parse(f, SOURCE);
        assertEquals(List.of("a", "b"), h.tensors().stream().map(TensorInfo::name).toList());
        assertEquals(Map.of("k", "v"), h.metadata());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            not json                  | {"a":                                                                       | 0 | not valid JSON
            not an object             | [1,2]                                                                       | 0 | does not start with '{'
            leading space             | ' {}'                                                                       | 0 | does not start with '{'
            unknown dtype             | {"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}                      | 8 | unsupported dtype 'C64'
            missing dtype             | {"a":{"shape":[1],"data_offsets":[0,1]}}                                    | 1 | 'dtype'
            negative shape            | {"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}                      | 1 | not a non-negative integer
            fractional shape          | {"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}}                     | 1 | not a non-negative integer
            three offsets             | {"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}                     | 1 | must hold 2 numbers
            length mismatch           | {"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}                      | 4 | needs 8
            reversed offsets          | {"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}                       | 4 | end before they begin
            gap                       | {"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}                       | 3 | starts at byte 1
            overlap                   | {"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}} | 3 | expected 2
            truncated data            | {"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}                       | 3 | truncated
            trailing data             | {"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}                       | 5 | trailing bytes
            duplicate tensor          | {"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}} | 1 | not valid JSON
            metadata not strings      | {"__metadata__":{"k":1}}                                                    | 0 | is not a string
            metadata not an object    | {"__metadata__":[]}                                                         | 0 | not a JSON object
            tensor not an object      | {"a":3}                                                                     | 0 | not a JSON object
            shape overflow            | {"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}  | 8 | overflows
            """)
    void malformedHeadersAreFormatErrorsNamingTheFile(String what, String json, int dataBytes, String problem) {
        ViperFormatException e = assertThrows(ViperFormatException.class, () -> SafetensorsHeaderReader.parse(file(json, dataBytes), SOURCE));
        assertEquals(SOURCE, e.source());
        assertTrue(e.getMessage().contains(problem), what + ": " + e.getMessage());
        assertTrue(e.getMessage().lines().count() == 1, "one line: " + e.getMessage());
    }

    @Test
    void badLengthPrefixesAreFormatErrors() {
        assertTrue(assertThrows(ViperFormatException.class, () -> SafetensorsHeaderReader.parse(MemorySegment.ofArray(new byte[5]), SOURCE))
                .getMessage().contains("too short"));
        byte[] huge = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(200_000_000L).array();
        assertTrue(assertThrows(ViperFormatException.class, () -> SafetensorsHeaderReader.parse(MemorySegment.ofArray(huge), SOURCE))
                .getMessage().contains("exceeds the limit"));
        byte[] negative = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(-1L).array();
        assertTrue(assertThrows(ViperFormatException.class, () -> SafetensorsHeaderReader.parse(MemorySegment.ofArray(negative), SOURCE))
                .getMessage().contains("exceeds the limit"));
        byte[] pastEnd = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(100).array();
        assertTrue(assertThrows(ViperFormatException.class, () -> SafetensorsHeaderReader.parse(MemorySegment.ofArray(pastEnd), SOURCE))
                .getMessage().contains("runs past the end"));
        byte[] zero = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0).array();
        assertThrows(ViperFormatException.class, () -> SafetensorsHeaderReader.parse(MemorySegment.ofArray(zero), SOURCE));
    }

    @Test
    void paddingIsSpaces() {
        for (int nameLength = 1; nameLength <= 9; nameLength++) {
            Manifest m = manifest(Map.of(), TensorInfo.of("x".repeat(nameLength), DType.U8, new long[] {1}, 0));
            byte[] head = SafetensorsHeaderWriter.encode(m);
            assertEquals(0, head.length % 8);
            String json = new String(head, 8, head.length - 8, StandardCharsets.UTF_8);
            String trimmed = json.stripTrailing();
            assertTrue(trimmed.endsWith("}"));
            assertArrayEquals(" ".repeat(json.length() - trimmed.length()).getBytes(StandardCharsets.US_ASCII),
                    json.substring(trimmed.length()).getBytes(StandardCharsets.US_ASCII));
            assertTrue(json.length() - trimmed.length() < 8);
        }
    }
}
