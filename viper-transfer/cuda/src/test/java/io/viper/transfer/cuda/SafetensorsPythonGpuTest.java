package io.viper.transfer.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.format.SafetensorsWriter;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Python's {@code safetensors} package reads a file Viper wrote: names, dtypes, shapes, values and metadata. Tagged gpu
 * because the GPU test image is where that package is installed; skipped where python3 or safetensors (with numpy) is
 * missing.
 */
@Tag("gpu")
class SafetensorsPythonGpuTest {
    private static final String SCRIPT = """
            import sys
            from safetensors.numpy import load_file
            from safetensors import safe_open
            t = load_file(sys.argv[1])
            for k in sorted(t):
                a = t[k]
                print(k, a.dtype.name, list(a.shape), repr(float(a.astype('float64').sum())))
            with safe_open(sys.argv[1], framework='numpy') as f:
                print('meta', f.metadata()['viper.model'], f.metadata()['note'])\
            """;

    @TempDir
    Path dir;

    private static String run(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("python3 did not finish");
        }
        return p.exitValue() == 0 ? out : null;
    }

    @Test
    void pythonSafetensorsReadsWhatViperWrites() throws Exception {
        String probe;
        try {
            probe = run(List.of("python3", "-c", "import safetensors.numpy, numpy; print('ok')"));
        } catch (IOException e) {
            probe = null;
        }
        assumeTrue(
                probe != null && probe.trim().equals("ok"), "python3 with safetensors and numpy is not installed here");

        Path file = dir.resolve("viper.safetensors");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment w = arena.allocate(6 * 4);
            for (int i = 0; i < 6; i++) {
                w.set(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 4L * i, 0.5f * i);
            }
            MemorySegment ids = arena.allocate(4 * 8);
            for (int i = 0; i < 4; i++) {
                ids.set(
                        ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN),
                        8L * i,
                        -1_000_000_000_000L * i);
            }
            MemorySegment bytes = arena.allocate(5);
            for (int i = 0; i < 5; i++) {
                bytes.set(ValueLayout.JAVA_BYTE, i, (byte) (250 + i % 6));
            }
            LinkedHashMap<String, String> meta = new LinkedHashMap<>();
            meta.put("viper.model", "nt3");
            meta.put("note", "hello");
            SafetensorsWriter.write(
                    file,
                    List.of(
                            Tensor.of("dense.weight", DType.F32, new long[] {2, 3}, w),
                            Tensor.of("ids", DType.I64, new long[] {4}, ids),
                            Tensor.of("raw", DType.U8, new long[] {5}, bytes)),
                    meta);
        }
        String out = run(List.of("python3", "-c", SCRIPT, file.toString()));
        assertEquals(
                String.join(
                                "\n",
                                "dense.weight float32 [2, 3] 7.5",
                                "ids int64 [4] -6000000000000.0",
                                "raw uint8 [5] " + (250.0 + 251 + 252 + 253 + 254),
                                "meta nt3 hello")
                        + "\n",
                out);
    }
}
