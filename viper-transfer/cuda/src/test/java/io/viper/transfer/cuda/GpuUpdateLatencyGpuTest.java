package io.viper.transfer.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.viper.ViperConfig;
import io.viper.config.ConfigValues;
import io.viper.format.SafetensorsFile;
import io.viper.format.SafetensorsWriter;
import io.viper.hash.ContentHash;
import io.viper.hash.ParallelHash64;
import io.viper.hash.Xxh3;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportServer;
import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import io.viper.testing.DeviceStagedCheckpoint;
import io.viper.testing.TestStagedCheckpoint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Model update latency on a GPU machine, per model size (default 1 GiB and 4.6 GiB; override with the environment
 * variable {@code VIPER_GPU_BENCH_SIZES=1g,4.6g}), each the best of 3 runs:
 *
 * <ul>
 *   <li>{@code d2d}: one {@code cuMemcpyDtoD} of the model on this GPU, the bound;
 *   <li>{@code cuda-ipc}: producer in a second process with the model in GPU memory; lease, map, device-to-device copy,
 *       release, then the on-device phash64 check;
 *   <li>{@code cuda-pipe}: the pipelined path over loopback TCP from a GPU-staged producer into GPU memory, then the
 *       on-device check;
 *   <li>{@code host}: host-staged producer, TCP loopback into a host buffer (cuda-pipe's host mode, a plain TCP
 *       stream), XXH3 check on the host (16 slices, 4 threads), then host to device;
 *   <li>{@code pfs}: the producer writes a safetensors file (fsynced), the consumer maps it, checks XXH3 and copies it
 *       to the device (the read side is served by the page cache here).
 * </ul>
 *
 * Figures are printed and appended to {@code $VIPER_GPU_FIGURES} when set.
 */
@Tag("gpu")
class GpuUpdateLatencyGpuTest {
    private static final int RUNS = 3;

    @TempDir
    Path dir;

    @BeforeEach
    void gpu() {
        GpuTests.assumeGpu();
    }

    private interface Run {
        void run() throws Exception;
    }

    private static double bestMs(Run r) throws Exception {
        double best = Double.MAX_VALUE;
        for (int i = 0; i < RUNS; i++) {
            long t0 = System.nanoTime();
            r.run();
            best = Math.min(best, (System.nanoTime() - t0) / 1e6);
        }
        return best;
    }

    private static List<Long> sizes() {
        String env = System.getenv("VIPER_GPU_BENCH_SIZES");
        List<Long> out = new ArrayList<>();
        for (String s : (env == null || env.isBlank() ? "1g,4.6g" : env).split(",")) {
            out.add(ConfigValues.parseSize(s.trim()) & ~7L);
        }
        return out;
    }

    @Test
    void gpuUpdateLatencyAgainstHostAndPfsPaths() throws Exception {
        List<String> lines = new ArrayList<>();
        lines.add(String.format(
                "%-10s %10s %10s %10s %10s %10s %10s %12s",
                "size", "d2d_ms", "d2d_GB/s", "ipc_ms", "pipe_ms", "host_ms", "pfs_ms", "pfs_write_ms"));
        for (long size : sizes()) {
            lines.add(measure(size));
            System.out.println(lines.getFirst());
            System.out.println(lines.getLast());
        }
        String env = System.getenv("VIPER_GPU_FIGURES");
        if (env != null && !env.isBlank()) {
            Files.write(Path.of(env), lines, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
    }

    private String measure(long size) throws Exception {
        long seed = 1234;
        try (Arena arena = Arena.ofShared();
                TestStagedCheckpoint host = new TestStagedCheckpoint("bench", 1, seed, size);
                DeviceBuffer a = GpuTests.GPU.allocate(0, size);
                DeviceBuffer b = GpuTests.GPU.allocate(0, size)) {
            long expected = ParallelHash64.hash(host.data());
            List<ContentHash> expectedSlices = List.of(Xxh3.hashAll(slices(host.data()), 4));
            GpuTests.GPU.copyToDevice(0, host.data(), a.devicePointer());

            double d2d = bestMs(() -> GpuTests.GPU.copyDeviceToDevice(0, a.devicePointer(), b.devicePointer(), size));
            double gbps = size / (d2d / 1e3) / 1e9;

            double ipc;
            try (ChildProducer producer = new ChildProducer("bench", size, seed);
                    TransportClient client = new CudaIpcTransportProvider().openClient(ViperConfig.defaults())) {
                Location loc = new Location(producer.uri, Tier.GPU);
                Manifest m = host.manifest();
                ipc = bestMs(() -> {
                    client.readToDevice(m, loc, List.of(new ByteRange(0, size, 0)), b);
                    assertEquals(expected, GpuTests.GPU.hash64(0, b.devicePointer(), size));
                });
            }

            double pipe;
            double hostPath;
            CudaPipeTransportProvider pp = new CudaPipeTransportProvider();
            try (DeviceStagedCheckpoint onGpu =
                            GpuTests.deviceStaged(new TestStagedCheckpoint("bench", 2, seed, size), 0);
                    TransportServer server =
                            pp.openServer(URI.create("cuda-pipe://127.0.0.1:0"), ViperConfig.defaults());
                    TransportClient client = pp.openClient(ViperConfig.defaults())) {
                server.expose(onGpu);
                server.expose(host);
                Location loc = server.location();
                pipe = bestMs(() -> {
                    client.readToDevice(onGpu.manifest(), loc, List.of(new ByteRange(0, size, 0)), b);
                    assertEquals(expected, GpuTests.GPU.hash64(0, b.devicePointer(), size));
                });
                MemorySegment recv = arena.allocate(size, 4096);
                hostPath = bestMs(() -> {
                    client.read(host.manifest(), loc, List.of(new ByteRange(0, size, 0)), recv);
                    assertEquals(expectedSlices, List.of(Xxh3.hashAll(slices(recv), 4)));
                    GpuTests.GPU.copyToDevice(0, recv, b.devicePointer());
                });
            }

            Path file = dir.resolve("model.safetensors");
            double[] write = {Double.MAX_VALUE};
            double pfs = bestMs(() -> {
                long t0 = System.nanoTime();
                SafetensorsWriter.write(
                        file, List.of(Tensor.of("w", DType.U8, new long[] {size}, host.data())), Map.of());
                write[0] = Math.min(write[0], (System.nanoTime() - t0) / 1e6);
                try (SafetensorsFile f = SafetensorsFile.open(file)) {
                    MemorySegment data = f.tensor("w").data();
                    assertEquals(expectedSlices, List.of(Xxh3.hashAll(slices(data), 4)));
                    GpuTests.GPU.copyToDevice(0, data, b.devicePointer());
                }
            });
            Files.deleteIfExists(file);

            // Figures only: every path's bytes were checked above; tests do not judge wall-clock time.
            return String.format(
                    "%-10s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f %12.1f",
                    String.format("%.2fGiB", size / (double) (1L << 30)),
                    d2d,
                    gbps,
                    ipc,
                    pipe,
                    hostPath,
                    pfs,
                    write[0]);
        }
    }

    /** The model as 16 tensor-sized slices, hashed in parallel as a host consumer verifies a model of many tensors. */
    private static List<MemorySegment> slices(MemorySegment s) {
        List<MemorySegment> out = new ArrayList<>();
        long step = (s.byteSize() + 15) / 16;
        for (long off = 0; off < s.byteSize(); off += step) {
            out.add(s.asSlice(off, Math.min(step, s.byteSize() - off)));
        }
        return out;
    }
}
