package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.CheckpointPolicy;
import io.viper.Viper;
import io.viper.ViperProducer;
import io.viper.format.SafetensorsFile;
import io.viper.tensor.DType;
import io.viper.testing.python.PythonRuntime;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code viper export}: a version the PFS repository keeps as blocks comes out as a standard safetensors file, which
 * viper's own reader and an independent Python reader (json, struct and numpy, no Viper code) read with the published
 * bytes.
 */
class ExportCommandTest {
    /**
     * Reads a safetensors file by the format's definition and prints name, dtype, shape and the SHA-256 of each
     * tensor's bytes.
     */
    private static final String READER = """
            import hashlib, json, struct, sys
            import numpy as np
            import torch
            DTYPES = {"F32": np.float32, "U8": np.uint8, "I64": np.int64, "F16": np.float16}
            with open(sys.argv[1], "rb") as f:
                raw = f.read()
            (n,) = struct.unpack("<Q", raw[:8])
            header = json.loads(raw[8:8 + n].decode("utf-8"))
            data = raw[8 + n:]
            meta = header.pop("__metadata__", {})
            end = 0
            for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
                start, stop = t["data_offsets"]
                assert start == end, "tensors are contiguous"
                end = stop
                a = np.frombuffer(data[start:stop], dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
                tensor = torch.from_numpy(a.copy())
                print(name, t["dtype"], list(tensor.shape), hashlib.sha256(a.tobytes()).hexdigest())
            assert end == len(data), "the data section is exactly the tensors"
            print("metadata", json.dumps(meta, sort_keys=True))
            """;

    @TempDir
    Path dir;

    private static String sha256(MemorySegment s) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(s.toArray(ValueLayout.JAVA_BYTE)));
    }

    @Test
    void aVersionKeptAsBlocksExportsAsAStandardSafetensorsFile() throws Exception {
        Path pfs = dir.resolve("pfs");
        MemorySegment weights;
        MemorySegment bias;
        try (Arena arena = Arena.ofConfined();
                Viper viper = Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .config("viper.transports", "")
                        .pfsRoot(pfs)
                        .config("viper.block.bytes", "4k")
                        .build();
                ViperProducer producer = viper.producer("net", CheckpointPolicy.never())) {
            weights = Arena.ofAuto().allocate(3 * 4096 + 40);
            bias = Arena.ofAuto().allocate(64 * 4);
            for (long i = 0; i < weights.byteSize() / 4; i++) {
                weights.setAtIndex(ValueLayout.JAVA_FLOAT, i, i * 0.5f);
            }
            producer.publish(
                            sink -> {
                                sink.add("dense.weight", DType.F32, new long[] {weights.byteSize() / 4}, weights);
                                sink.add("dense.bias", DType.F32, new long[] {64}, bias);
                            },
                            Map.of())
                    .durable()
                    .join();
            weights.setAtIndex(ValueLayout.JAVA_FLOAT, 5, -1f); // v2: one block of dense.weight changes
            producer.publish(
                            sink -> {
                                sink.add("dense.weight", DType.F32, new long[] {weights.byteSize() / 4}, weights);
                                sink.add("dense.bias", DType.F32, new long[] {64}, bias);
                            },
                            Map.of("note", "v2"))
                    .durable()
                    .join();
        }
        assertFalse(Files.exists(pfs.resolve("net/2/model.safetensors")), "the repository keeps v2 as blocks");

        Path out = Files.writeString(dir.resolve("net-v2.safetensors"), "an earlier export, replaced whole");
        StringWriter err = new StringWriter();
        int code = ViperMain.execute(
                new String[] {"export", "--pfs", pfs.toString(), "--model", "net", "--out", out.toString()},
                new PrintWriter(new StringWriter()),
                new PrintWriter(err));
        assertEquals(0, code, err.toString());
        try (SafetensorsFile f = SafetensorsFile.open(out)) {
            assertEquals(-1, weights.mismatch(f.tensor("dense.weight").data()));
            assertEquals("v2", f.metadata().get("note"));
        }

        String python = PythonRuntime.python();
        Path script = Files.writeString(dir.resolve("read_safetensors.py"), READER);
        PythonRuntime.Result r = PythonRuntime.run(List.of(python, script.toString(), out.toString()), Map.of(), 120);
        assertEquals(0, r.exit(), r.output());
        assertTrue(
                r.output().contains("dense.weight F32 [" + weights.byteSize() / 4 + "] " + sha256(weights)),
                r.output());
        assertTrue(r.output().contains("dense.bias F32 [64] " + sha256(bias)), r.output());
        assertTrue(r.output().contains("\"note\": \"v2\""), r.output());

        try (var left = Files.list(dir)) {
            assertEquals(
                    List.of(),
                    left.filter(p -> p.getFileName().toString().endsWith(".tmp"))
                            .toList(),
                    "no temporary file left");
        }
        byte[] exported = Files.readAllBytes(out);
        assertEquals(
                2,
                ViperMain.execute(
                        new String[] {
                            "export",
                            "--pfs",
                            pfs.toString(),
                            "--model",
                            "net",
                            "--version",
                            "9",
                            "--out",
                            out.toString()
                        },
                        new PrintWriter(new StringWriter()),
                        new PrintWriter(err)),
                "an unknown version is refused");
        assertArrayEquals(exported, Files.readAllBytes(out), "a failed export leaves the file at --out as it was");
    }

    @Test
    void anOutputFileWithoutItsDirectoryIsRefused() throws Exception {
        Path pfs = Files.createDirectories(dir.resolve("pfs"));
        Path file = Files.writeString(dir.resolve("file"), "x");
        for (Path out : List.of(dir.resolve("missing/m.safetensors"), file.resolve("m.safetensors"))) {
            InspectCommandTest.Run r =
                    InspectCommandTest.run("export", "--pfs", pfs.toString(), "--model", "m", "--out", out.toString());
            assertEquals(2, r.exit(), r.err());
            String why =
                    out.getParent().equals(file) ? file + " is not a directory" : "no directory " + out.getParent();
            assertEquals(List.of("viper: --out " + out + ": " + why), r.errLines());
        }
    }

    @Test
    void anOutputThatIsNoRegularFileIsRefusedAndLeftAlone() throws Exception {
        Path pfs = Files.createDirectories(dir.resolve("pfs"));
        Path fifo = dir.resolve("pipe.safetensors");
        assertEquals(
                0,
                new ProcessBuilder("mkfifo", fifo.toString())
                        .inheritIO()
                        .start()
                        .waitFor(),
                "mkfifo");
        Path directory = Files.createDirectories(dir.resolve("a-directory"));
        // Refused before the model is looked up: the repository is empty, and the flag is what to change.
        InspectCommandTest.Run r =
                InspectCommandTest.run("export", "--pfs", pfs.toString(), "--model", "m", "--out", fifo.toString());
        assertEquals(2, r.exit(), r.err());
        assertEquals(
                List.of("viper: --out " + fifo + ": is not a regular file (a pipe, socket or device), not a file"),
                r.errLines());
        assertTrue(Files.exists(fifo) && !Files.isRegularFile(fifo), "the FIFO is left in place");
        r = InspectCommandTest.run("export", "--pfs", pfs.toString(), "--model", "m", "--out", directory.toString());
        assertEquals(2, r.exit(), r.err());
        assertEquals(List.of("viper: --out " + directory + ": is a directory, not a file"), r.errLines());
    }
}
