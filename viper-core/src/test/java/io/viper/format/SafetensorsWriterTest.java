package io.viper.format;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.tensor.Checkpoint;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsWriterTest {
    @TempDir
    Path dir;

    private static int[] unsigned(byte[] b) {
        int[] out = new int[b.length];
        for (int i = 0; i < b.length; i++) {
            out[i] = b[i] & 0xFF;
        }
        return out;
    }

    /** The reference implementation's own unit-test vectors (safetensors/src/tensor.rs). */
    @Test
    void matchesTheReferenceSerializationByteForByte() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            float[] values = {0, 1, 2, 3, 4, 5};
            Path p = dir.resolve("attn.safetensors");
            SafetensorsWriter.write(
                    p, List.of(Tensor.ofFloats("attn.0", new long[] {1, 2, 3}, values, arena)), Map.of());
            assertArrayEquals(
                    new int[] {
                        64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100, 116, 121,
                        112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58, 91, 49, 44, 50,
                        44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115, 101, 116, 115, 34, 58, 91, 48, 44,
                        50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
                        160, 64
                    },
                    unsigned(Files.readAllBytes(p)));

            Path q = dir.resolve("aligned.safetensors");
            SafetensorsWriter.write(
                    q, List.of(Tensor.ofFloats("attn0", new long[] {1, 1, 2, 3}, values, arena)), Map.of());
            assertArrayEquals(
                    new int[] {
                        72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116, 121, 112,
                        101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58, 91, 49, 44, 49, 44, 50,
                        44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115, 101, 116, 115, 34, 58, 91, 48, 44,
                        50, 52, 93, 125, 125, 32, 32, 32, 32, 32, 32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0,
                        64, 64, 0, 0, 128, 64, 0, 0, 160, 64
                    },
                    unsigned(Files.readAllBytes(q)));
        }
        Path empty = dir.resolve("empty.safetensors");
        assertEquals(16, SafetensorsWriter.write(empty, List.of(), Map.of()));
        assertArrayEquals(
                new int[] {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32},
                unsigned(Files.readAllBytes(empty)));
        Path meta = dir.resolve("meta.safetensors");
        SafetensorsWriter.write(meta, List.of(), Map.of("framework", "pt"));
        assertArrayEquals(
                new int[] {
                    40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95, 95, 34, 58, 123,
                    34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112, 116, 34, 125, 125, 32, 32, 32, 32,
                    32
                },
                unsigned(Files.readAllBytes(meta)));
    }

    @Test
    void writesMetadataFirstTensorsInDataOrderAndPadsWithSpaces() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            Checkpoint cp = Checkpoint.builder("m")
                    .version(7)
                    .add(Tensor.ofFloats("z.last-name-first", new long[] {3}, new float[] {1, 2, 3}, arena))
                    .add("a", DType.U8, new long[] {5}, arena.allocate(5))
                    .metadata("viper.iteration", "120")
                    .metadata("ünï\"code\\", "✓ 𝔘")
                    .build();
            Path p = dir.resolve("m.safetensors");
            long size = SafetensorsWriter.write(p, cp);
            assertEquals(Files.size(p), size);
            byte[] bytes = Files.readAllBytes(p);
            try (SafetensorsFile f = SafetensorsFile.open(p)) {
                assertEquals(0, f.headerBytes() % 8, "header padded to a multiple of 8");
                assertEquals(size, 8 + f.headerBytes() + f.dataBytes());
                String json = new String(bytes, 8, (int) f.headerBytes(), StandardCharsets.UTF_8);
                assertTrue(json.startsWith("{\"__metadata__\":{\"viper.iteration\":\"120\","), json);
                assertTrue(json.indexOf("z.last-name-first") < json.indexOf("\"a\""), "tensors in data order: " + json);
                String trimmed = json.stripTrailing();
                assertTrue(trimmed.endsWith("}"));
                assertTrue(json.substring(trimmed.length()).chars().allMatch(c -> c == ' '), "padding is spaces");
                assertEquals(
                        List.of("z.last-name-first", "a"),
                        f.tensors().stream().map(Tensor::name).toList());
                assertEquals(cp.metadata(), f.metadata());
                assertArrayEquals(
                        new float[] {1, 2, 3}, f.tensor("z.last-name-first").toFloatArray());
            }
        }
    }

    @Test
    void streamsHeapNativeAndMultiChunkSegments() throws IOException {
        int big = SafetensorsWriter.CHUNK_BYTES * 2 + 12345;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment large = arena.allocate(big);
            for (long i = 0; i < big; i += 4093) {
                large.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31));
            }
            large.set(ValueLayout.JAVA_BYTE, big - 1, (byte) 0x5A);
            int[] ints = {1, -2, 3, Integer.MIN_VALUE};
            Tensor heapInts = Tensor.of("heap", DType.I32, new long[] {4}, MemorySegment.ofArray(ints));
            Tensor heapBytes =
                    Tensor.of("bytes", DType.I8, new long[] {3}, MemorySegment.ofArray(new byte[] {7, 8, 9}));
            Tensor native_ = Tensor.of("large", DType.U8, new long[] {big}, large);
            double[] doubles = new double[100];
            Arrays.setAll(doubles, i -> i * 0.5 - 7);
            Tensor heapDoubles = Tensor.of("doubles", DType.F64, new long[] {10, 10}, MemorySegment.ofArray(doubles));
            Path p = dir.resolve("chunks.safetensors");
            SafetensorsWriter.write(p, List.of(heapInts, native_, heapBytes, heapDoubles), Map.of());
            try (SafetensorsFile f = SafetensorsFile.open(p)) {
                assertEquals(-1L, f.tensor("large").data().mismatch(large), "large tensor bytes equal");
                assertEquals(-1L, f.tensor("heap").data().mismatch(MemorySegment.ofArray(ints)));
                assertEquals(Integer.MIN_VALUE, (int) f.tensor("heap").getDouble(3));
                assertEquals(9, (int) f.tensor("bytes").getDouble(2));
                assertEquals(
                        -1L,
                        f.tensor("doubles").data().mismatch(MemorySegment.ofArray(doubles)),
                        "a larger heap tensor after a small one");
            }
        }
    }

    @Test
    void overwritesAnExistingFile() throws IOException {
        Path p = dir.resolve("o.safetensors");
        Files.write(p, new byte[10_000]);
        SafetensorsWriter.write(p, List.of(), Map.of());
        assertEquals(16, Files.size(p));
    }

    @Test
    void refusesNamesTheFormatCannotHold() {
        Path p = dir.resolve("bad.safetensors");
        MemorySegment four = MemorySegment.ofArray(new byte[4]);
        ViperConfigException reserved = assertThrows(
                ViperConfigException.class,
                () -> SafetensorsWriter.write(
                        p, List.of(Tensor.of("__metadata__", DType.U8, new long[] {4}, four)), Map.of()));
        assertTrue(reserved.getMessage().contains("reserved"), reserved.getMessage());
        ViperConfigException dup = assertThrows(
                ViperConfigException.class,
                () -> SafetensorsWriter.write(
                        p,
                        List.of(
                                Tensor.of("x", DType.U8, new long[] {4}, four),
                                Tensor.of("x", DType.I32, new long[] {1}, four)),
                        Map.of()));
        assertTrue(dup.getMessage().contains("duplicate tensor name 'x'"), dup.getMessage());
        Map<String, String> huge = new LinkedHashMap<>();
        huge.put("k", "v".repeat((int) SafetensorsHeader.MAX_HEADER_BYTES));
        ViperConfigException tooBig =
                assertThrows(ViperConfigException.class, () -> SafetensorsWriter.write(p, List.of(), huge));
        assertTrue(tooBig.getMessage().contains("exceeds the limit"), tooBig.getMessage());
        assertFalse(Files.exists(p), "nothing written");
    }

    @Test
    void aFifoIsRefusedWithoutBeingOpenedAndLeftInPlace() throws Exception {
        Path fifo = dir.resolve("pipe.safetensors");
        assertEquals(
                0,
                new ProcessBuilder("mkfifo", fifo.toString())
                        .inheritIO()
                        .start()
                        .waitFor(),
                "mkfifo");
        // Opening a FIFO for writing blocks until a reader comes: refused before opening.
        ViperFormatException e = assertTimeoutPreemptively(
                Duration.ofSeconds(30),
                () -> assertThrows(
                        ViperFormatException.class, () -> SafetensorsWriter.write(fifo, List.of(), Map.of())));
        assertEquals(
                fifo
                        + ": is not a regular file (a pipe, socket or device), not a file to write a safetensors file"
                        + " over",
                e.getMessage());
        assertTrue(Files.exists(fifo) && !Files.isRegularFile(fifo), "the FIFO is left in place");
    }

    @Test
    void aDeviceIsWrittenToButNeverDeleted() throws Exception {
        // viper export --out /dev/null (as root) took a short write, and the failure path deleted the device node.
        // A device where every write fails with ENOSPC stands for it (a copy of /dev/full, where one may be made).
        Path full = fullDevice();
        ViperException e = assertThrows(ViperException.class, () -> SafetensorsWriter.write(full, List.of(), Map.of()));
        assertEquals(ViperException.Reason.IO, e.reason());
        assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
        assertTrue(Files.exists(full) && !Files.isRegularFile(full), "the device is not deleted");
    }

    /**
     * A character device like {@code /dev/full}: as root a copy in the test directory (so that a bug deleting it
     * deletes the copy), else {@code /dev/full} itself, which this user cannot delete.
     */
    private Path fullDevice() throws Exception {
        Path full = Path.of("/dev/full");
        assertTrue(Files.isWritable(full), "/dev/full (Linux)");
        Path copy = dir.resolve("full");
        Process mknod = new ProcessBuilder("mknod", copy.toString(), "c", "1", "7")
                .redirectErrorStream(true)
                .start();
        mknod.getInputStream().readAllBytes();
        return mknod.waitFor() == 0 && Files.exists(copy) ? copy : full;
    }

    @Test
    void ioFailuresAreTypedAndLeaveNoPartialFile() {
        Path nowhere = dir.resolve("missing-dir").resolve("x.safetensors");
        ViperException e =
                assertThrows(ViperException.class, () -> SafetensorsWriter.write(nowhere, List.of(), Map.of()));
        assertEquals(ViperException.Reason.IO, e.reason());
        assertTrue(e.getMessage().startsWith(nowhere.toString()), e.getMessage());

        // A path that is a directory: refused as no file to write over, and the directory is left alone.
        Path directory = dir.resolve("a-directory");
        assertDoesNotThrow(() -> Files.createDirectory(directory));
        ViperException d =
                assertThrows(ViperFormatException.class, () -> SafetensorsWriter.write(directory, List.of(), Map.of()));
        assertEquals(directory + ": is a directory, not a file to write a safetensors file over", d.getMessage());
        assertTrue(Files.isDirectory(directory), "not deleted");

        // Memory freed mid-write: the write fails and the partial file is removed.
        Path p = dir.resolve("partial.safetensors");
        Arena arena = Arena.ofShared();
        Tensor ok = Tensor.of("ok", DType.U8, new long[] {8}, MemorySegment.ofArray(new byte[8]));
        Tensor gone = Tensor.of("gone", DType.U8, new long[] {8}, arena.allocate(8));
        arena.close();
        assertThrows(IllegalStateException.class, () -> SafetensorsWriter.write(p, List.of(ok, gone), Map.of()));
        assertFalse(Files.exists(p), "partial file deleted");
    }

    @Test
    void replaceSwapsTheWholeNewFileIn() throws IOException {
        Path p = dir.resolve("r.safetensors");
        Files.write(p, new byte[10_000]);
        Tensor t = Tensor.of("t", DType.U8, new long[] {3}, MemorySegment.ofArray(new byte[] {1, 2, 3}));
        long size = SafetensorsWriter.replace(p, Checkpoint.of("m", 7, List.of(t), Map.of("k", "v")));
        assertEquals(size, Files.size(p));
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertEquals(Map.of("k", "v"), f.metadata());
            assertArrayEquals(new byte[] {1, 2, 3}, f.tensor("t").data().toArray(ValueLayout.JAVA_BYTE));
        }
        assertEquals(List.of(p), filesIn(dir), "no temporary file left");
    }

    @Test
    void aReplaceThatFailsLeavesTheFileThatWasThere() throws IOException {
        // viper export --out over an earlier export: a failure midway truncated or deleted it.
        Path p = dir.resolve("kept.safetensors");
        byte[] before = "the file that was there".getBytes(StandardCharsets.UTF_8);
        Files.write(p, before);
        Arena arena = Arena.ofShared();
        Tensor ok = Tensor.of("ok", DType.U8, new long[] {8}, MemorySegment.ofArray(new byte[8]));
        Tensor gone = Tensor.of("gone", DType.U8, new long[] {8}, arena.allocate(8));
        arena.close();
        assertThrows(IllegalStateException.class, () -> SafetensorsWriter.replace(p, List.of(ok, gone), Map.of()));
        assertArrayEquals(before, Files.readAllBytes(p), "memory gone midway");
        ViperConfigException header = assertThrows(
                ViperConfigException.class,
                () -> SafetensorsWriter.replace(
                        p,
                        List.of(Tensor.of(
                                "__metadata__", DType.U8, new long[] {8}, MemorySegment.ofArray(new byte[8]))),
                        Map.of()));
        assertTrue(
                header.getMessage().startsWith(p + ": "),
                "names the file asked for, not the temporary one: " + header.getMessage());
        assertArrayEquals(before, Files.readAllBytes(p), "a header refused");
        assertEquals(List.of(p), filesIn(dir), "no temporary file left");

        Path nowhere = dir.resolve("missing-dir").resolve("x.safetensors");
        ViperException io =
                assertThrows(ViperException.class, () -> SafetensorsWriter.replace(nowhere, List.of(), Map.of()));
        assertEquals(ViperException.Reason.IO, io.reason());
        assertTrue(io.getMessage().startsWith(nowhere + ": cannot write: "), io.getMessage());
    }

    @Test
    void replaceRefusesWhatIsNoRegularFile() throws Exception {
        Path directory = Files.createDirectory(dir.resolve("a-directory"));
        ViperFormatException d = assertThrows(
                ViperFormatException.class, () -> SafetensorsWriter.replace(directory, List.of(), Map.of()));
        assertEquals(directory + ": is a directory, not a file to replace with a safetensors file", d.getMessage());
        // A rename would put a file where the device was: a /dev/full stands for any device.
        Path device = fullDevice();
        assertThrows(ViperFormatException.class, () -> SafetensorsWriter.replace(device, List.of(), Map.of()));
        assertTrue(
                Files.exists(device) && !Files.isRegularFile(device) && Files.isDirectory(directory),
                "both left as they were");
    }

    private static List<Path> filesIn(Path dir) throws IOException {
        try (var files = Files.list(dir)) {
            return files.sorted().toList();
        }
    }
}
