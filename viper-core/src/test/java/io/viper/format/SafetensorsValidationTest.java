package io.viper.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Hand-made files for the validation rules the shared test data does not cover. */
class SafetensorsValidationTest {
    @TempDir
    Path dir;

    /** A file with the given header bytes (length prefix = header length) and {@code dataBytes} bytes 0, 1, 2, ... */
    static byte[] file(byte[] header, int dataBytes) {
        ByteBuffer b = ByteBuffer.allocate(8 + header.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(header.length).put(header);
        for (int i = 0; i < dataBytes; i++) {
            b.put((byte) i);
        }
        return b.array();
    }

    Path write(String name, byte[] bytes) throws IOException {
        Path p = dir.resolve(name);
        Files.write(p, bytes);
        return p;
    }

    Path write(String header, int dataBytes) throws IOException {
        return write("t.safetensors", file(header.getBytes(StandardCharsets.UTF_8), dataBytes));
    }

    String refusal(Path p) {
        ViperFormatException e = assertThrows(
                ViperFormatException.class, () -> SafetensorsFile.open(p).close());
        assertEquals(p.toString(), e.source());
        assertFalse(e.getMessage().contains("\n"), "one line: " + e.getMessage());
        return e.problem();
    }

    String refusal(String header, int dataBytes) throws IOException {
        return refusal(write(header, dataBytes));
    }

    @Test
    void tensorsComeInDataOrderWhateverTheJsonOrder() throws IOException {
        String header = "{\"c\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[10,12]},"
                + "\"__metadata__\":{\"z\":\"1\",\"a\":\"2\"},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[2,10]},"
                + "\"b\":{\"dtype\":\"I16\",\"shape\":[],\"data_offsets\":[0,2]}}";
        try (SafetensorsFile f = SafetensorsFile.open(write(header, 12))) {
            assertEquals(
                    List.of("b", "a", "c"),
                    f.tensors().stream().map(Tensor::name).toList());
            assertEquals(
                    List.of(0L, 2L, 10L),
                    f.tensors().stream().map(t -> t.info().offset()).toList());
            assertEquals(List.of("z", "a"), List.copyOf(f.metadata().keySet()), "metadata keeps file order");
            assertEquals(
                    (byte) 10, f.tensor("c").data().get(ValueLayout.JAVA_BYTE, 0), "c's bytes start at data offset 10");
            assertEquals(
                    2 | (3 << 8),
                    f.tensor("a").data().get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0));
            assertNull(f.tensor("missing"));
            Checkpoint cp = f.checkpoint("m", 3);
            assertEquals(
                    List.of("b", "a", "c"),
                    cp.tensors().stream().map(Tensor::name).toList());
            assertEquals(12, cp.totalBytes());
            assertEquals(Map.of("z", "1", "a", "2"), cp.metadata());
            assertEquals(f.tensor("a").info(), cp.tensor("a").info());
        }
    }

    @Test
    void zeroSizeTensorsAtTheSameOffsetKeepJsonOrder() throws IOException {
        String header = "{\"e2\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
                + "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"e1\":{\"dtype\":\"F64\",\"shape\":[3,0],\"data_offsets\":[4,4]}}";
        try (SafetensorsFile f = SafetensorsFile.open(write(header, 4))) {
            assertEquals(
                    List.of("x", "e2", "e1"),
                    f.tensors().stream().map(Tensor::name).toList());
        }
    }

    @Test
    void emptyFilesAndNullMetadataAreValid() throws IOException {
        try (SafetensorsFile f = SafetensorsFile.open(write("{}", 0))) {
            assertEquals(0, f.tensors().size());
            assertEquals(2, f.headerBytes());
            assertEquals(0, f.dataBytes());
        }
        try (SafetensorsFile f = SafetensorsFile.open(write("{\"__metadata__\":null}      ", 0))) {
            assertTrue(f.metadata().isEmpty());
        }
        // a zero dimension first keeps the running product at 0: no overflow, like the reference's checked fold
        try (SafetensorsFile f = SafetensorsFile.open(write(
                "{\"x\":{\"dtype\":\"U8\",\"shape\":[0,9223372036854775807,9223372036854775807],\"data_offsets\":[0,"
                        + "0]}}",
                0))) {
            assertEquals(0, f.tensor("x").info().elementCount());
        }
        // unknown fields in a tensor entry are ignored, as the reference's serde structs do
        try (SafetensorsFile f = SafetensorsFile.open(
                write("{\"x\":{\"dtype\":\"BOOL\",\"shape\":[1],\"data_offsets\":[0,1],\"extra\":[1]}}", 1))) {
            assertEquals(DType.BOOL, f.tensor("x").dtype());
        }
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(
            delimiter = '|',
            quoteCharacter = '`',
            value = {
                "leading space          | ` {}`                                        | not a json object",
                "empty header           | ``                                           | header is empty",
                "trailing content       | `{} x`                                       | not valid json",
                "two objects            | `{}{}`                                       | not valid json",
                "cut short              | `{\"x\": `                                  | not valid json",
                "duplicate tensor       | `{\"x\":{},\"x\":{}}`                      | duplicate tensor name 'x'",
                "duplicate key          | `{\"x\":{\"dtype\":\"F32\",\"dtype\":\"F32\"}}` | tensor 'x': duplicate key"
                        + " 'dtype'",
                "duplicate meta key     | `{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}` | __metadata__: duplicate"
                        + " key 'a'",
                "duplicate meta         | `{\"__metadata__\":{},\"__metadata__\":{}}` | duplicate __metadata__ entry",
                "metadata array         | `{\"__metadata__\":[]}`                     | __metadata__ is an array, not"
                        + " an object of strings",
                "entry not object       | `{\"x\":3}`                                  | tensor 'x': entry is a number",
                "missing dtype          | `{\"x\":{\"shape\":[1],\"data_offsets\":[0,4]}}` | tensor 'x': missing dtype",
                "dtype number           | `{\"x\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}` | tensor 'x':"
                        + " dtype is a number, not a string",
                "lower-case dtype       | `{\"x\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}` | tensor"
                        + " 'x': unknown dtype f32",
                "missing shape          | `{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}` | tensor 'x': missing"
                        + " shape",
                "fractional dim         | `{\"x\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,4]}}` | not"
                        + " a list of integers",
                "shape string           | `{\"x\":{\"dtype\":\"F32\",\"shape\":\"1\",\"data_offsets\":[0,4]}}` | not"
                        + " a list of integers",
                "huge dim               |"
                        + " `{\"x\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}` |"
                        + " overflows 64 bits",
                "one offset             | `{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}` | not two"
                        + " non-negative integers",
                "three offsets          | `{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}` | not"
                        + " two non-negative integers",
                "negative offset        | `{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}` | not"
                        + " two non-negative integers",
                "float offset           | `{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]}}` | not"
                        + " two non-negative integers",
                "huge offset            |"
                        + " `{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,99999999999999999999]}}` |"
                        + " past the end of any file",
                "begin after end        | `{\"x\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,0]}}` | end"
                        + " before they begin",
                "hole at start          | `{\"x\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}` | hole of"
                        + " 4 bytes after the start of the data",
                "overflow before a zero  |"
                        + " `{\"x\":{\"dtype\":\"F32\",\"shape\":[9223372036854775807,9223372036854775807,0],"
                        + "\"data_offsets\":[0,0]}}` | overflows 64 bits",
            })
    void refusesMalformedHeaders(String caseName, String header, String reason) throws IOException {
        String problem = refusal(header, 8);
        assertTrue(
                problem.toLowerCase(Locale.ROOT).contains(reason.toLowerCase(Locale.ROOT)),
                caseName + ": expected '" + reason + "' in: " + problem);
    }

    @Test
    void refusesInvalidUtf8() throws IOException {
        byte[] header = "{\"x\":{}}".getBytes(StandardCharsets.US_ASCII);
        header[3] = (byte) 0xC3; // a lead byte followed by an ASCII byte
        assertEquals("header is not valid UTF-8", refusal(write("u.safetensors", file(header, 0))));
    }

    @Test
    void headerLengthLimitIsInclusiveAndUnsigned() throws IOException {
        ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(0, SafetensorsHeader.MAX_HEADER_BYTES);
        assertTrue(refusal(write("a.safetensors", b.array())).contains("points past the end"));
        b.putLong(0, SafetensorsHeader.MAX_HEADER_BYTES + 1);
        assertEquals(
                "header length 100000001 exceeds the limit of 100000000 bytes",
                refusal(write("b.safetensors", b.array())));
        b.putLong(0, -1L);
        assertEquals(
                "header length 18446744073709551615 exceeds the limit of 100000000 bytes",
                refusal(write("c.safetensors", b.array())));
        assertTrue(refusal(write("d.safetensors", new byte[0])).contains("too short: 0 bytes"));
    }

    @Test
    void namesWithControlCharactersStayOnOneLine() throws IOException {
        String problem = refusal("{\"a\\nb\":{\"dtype\":\"X\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
        assertEquals("tensor 'a\\u000ab': unknown dtype X", problem);
    }

    @Test
    void missingFileAndDirectoryAreReportedAsSuch() {
        Path missing = dir.resolve("nope.safetensors");
        ViperException e = assertThrows(ViperException.class, () -> SafetensorsFile.open(missing));
        assertEquals(ViperException.Reason.NOT_FOUND, e.reason());
        assertEquals(missing + ": no such file", e.getMessage());
        ViperFormatException d = assertThrows(ViperFormatException.class, () -> SafetensorsFile.open(dir));
        assertEquals(dir + ": is a directory, not a safetensors file", d.getMessage());
    }

    @Test
    void aFifoIsRefusedWithoutBeingOpened() throws Exception {
        Path fifo = dir.resolve("pipe.safetensors");
        assertEquals(
                0,
                new ProcessBuilder("mkfifo", fifo.toString())
                        .inheritIO()
                        .start()
                        .waitFor(),
                "mkfifo");
        // Opening a FIFO for reading blocks until a writer comes: a refusal that returns proves it was not opened.
        ViperFormatException e = assertTimeoutPreemptively(
                Duration.ofSeconds(30),
                () -> assertThrows(ViperFormatException.class, () -> SafetensorsFile.open(fifo)));
        assertEquals(
                fifo + ": is not a regular file (a pipe, socket or device), not a safetensors file", e.getMessage());
    }

    @Test
    void headerRecordExposesTheLayout() throws IOException {
        String header = "{\"x\":{\"dtype\":\"F16\",\"shape\":[2,2],\"data_offsets\":[0,8]}}";
        try (SafetensorsFile f = SafetensorsFile.open(write(header, 8))) {
            SafetensorsHeader h = f.header();
            assertEquals(header.length(), h.headerBytes());
            assertEquals(8 + header.length(), h.dataStart());
            assertEquals(8 + header.length() + 8, h.fileBytes());
            assertArrayEquals(new long[] {2, 2}, h.tensors().getFirst().shape());
        }
    }
}
