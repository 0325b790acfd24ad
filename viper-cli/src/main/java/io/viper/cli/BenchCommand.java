package io.viper.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.CheckpointPolicy;
import io.viper.PublishHandle;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperProducer;
import io.viper.cli.bench.BenchConsumerMain;
import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.GpuProvider;
import io.viper.spi.Providers;
import io.viper.spi.TransportProvider;
import io.viper.tensor.DType;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code viper bench}: benchmarks of the real data path. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmarks of the real data path.",
        subcommands = BenchCommand.Transfer.class)
final class BenchCommand implements Runnable {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /**
     * {@code viper bench transfer}: a producer here, a consumer in a second JVM; per path the update
     * latency from {@code publish} called to the consumer's swap (both timestamps taken here: the
     * consumer reports its swap over a pipe), against one in-process memcpy of the same size and the
     * PFS with a polling consumer.
     */
    @Command(name = "transfer", mixinStandardHelpOptions = true,
            description = {"Update latency per path between two processes, against one memcpy of the model (the bound)",
                "and the PFS with a consumer polling every second (the baseline users have today)."})
    static final class Transfer implements Callable<Integer> {
        @Option(names = "--size", paramLabel = "SIZE", defaultValue = "256m", description = "Model size (k, m, g suffixes; default: ${DEFAULT-VALUE})")
        String size;

        @Option(names = "--paths", paramLabel = "PATHS", defaultValue = "host,tcp,pfs",
                description = "Paths to measure: host (UCX shared memory/RDMA), tcp, pfs (PFS with push notification), gpu (default: ${DEFAULT-VALUE})")
        String paths;

        @Option(names = "--repeat", paramLabel = "N", defaultValue = "5", description = "Measured updates per path (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(names = "--poll-interval", paramLabel = "DURATION", defaultValue = "1s", converter = Durations.class,
                description = "Polling interval of the baseline consumer (default: ${DEFAULT-VALUE})")
        java.time.Duration pollInterval;

        @Option(names = "--no-baseline", description = "Skip the PFS polling baseline")
        boolean noBaseline;

        @Option(names = "--dir", paramLabel = "DIR", description = "Where the PFS repository lives (default: a temporary directory)")
        Path dir;

        @Option(names = "--json", description = "Print one JSON object instead of a table")
        boolean json;

        @Option(names = {"-v", "--verbose"}, description = "Log what Viper does on stderr")
        boolean verbose;

        @Override
        public Integer call() throws Exception {
            CliLogging.configure(verbose);
            long bytes = ConfigValues.parseSize(size);
            if (bytes < 1024) {
                throw new ViperConfigException("--size " + size + " is too small (at least 1k)");
            }
            if (repeat < 1 || repeat > 1000) {
                throw new ViperConfigException("--repeat " + repeat + " must be between 1 and 1000");
            }
            List<String> wanted = new ArrayList<>(new LinkedHashSet<>(Arrays.stream(paths.split(",")).map(s -> s.trim().toLowerCase(Locale.ROOT))
                    .filter(s -> !s.isEmpty()).toList()));
            for (String p : wanted) {
                switch (p) {
                    case "host", "ucx", "tcp", "pfs" -> { }
                    case "gpu" -> {
                        Optional<TransportProvider> ipc = Providers.transport("cuda-ipc");
                        String why = ipc.isEmpty() ? "no GPU transport is installed" : ipc.get().unavailableReason().orElse(null);
                        if (why == null && Providers.gpu().isEmpty()) {
                            why = "no GPU provider is installed";
                        }
                        if (why != null) {
                            throw new ViperUnsupportedException("--paths gpu: " + why);
                        }
                    }
                    default -> throw new ViperConfigException("--paths: unknown path '" + p + "' (use host, tcp, pfs, gpu)");
                }
            }
            Path root = dir != null ? dir : Files.createTempDirectory("viper-bench");
            ObjectNode out = new ObjectMapper().createObjectNode();
            out.put("size_bytes", bytes);
            try (Arena arena = Arena.ofShared()) {
                MemorySegment model = arena.allocate(bytes, 4096);
                fill(model);
                double memcpyMs = memcpyMs(model, arena);
                out.put("memcpy_ms", round(memcpyMs));
                if (wanted.contains("gpu")) {
                    out.put("d2d_ms", round(deviceCopyMs(model)));
                }
                ArrayNode results = out.putArray("results");
                for (String p : wanted) {
                    String scheme = switch (p) {
                        case "host", "ucx" -> "ucx";
                        case "tcp" -> "tcp";
                        case "gpu" -> "cuda-ipc";
                        default -> "file";
                    };
                    if (!scheme.equals("file")) {
                        Optional<String> why = Providers.transport(scheme).map(t -> t.unavailableReason().orElse(null));
                        if (why.isPresent()) {
                            System.err.println("viper: skipping path " + p + ": " + why.get());
                            continue;
                        }
                    }
                    progress("measuring " + p + " (" + scheme + ")...");
                    results.add(measure(p, scheme, model, root.resolve(p), false));
                }
                if (!noBaseline) {
                    progress("measuring the PFS baseline with a consumer polling every " + pollInterval.toMillis() + " ms...");
                    results.add(measure("pfs-poll", "file", model, root.resolve("pfs-poll"), true));
                }
            }
            if (json) {
                System.out.println(out);
            } else {
                printTable(out);
            }
            return 0;
        }

        private void progress(String line) {
            if (!json) {
                System.err.println(line);
            }
        }

        private ObjectNode measure(String path, String scheme, MemorySegment model, Path pfs, boolean poll) throws Exception {
            Files.createDirectories(pfs);
            Viper.Builder b = Viper.builder().notifier("embedded://127.0.0.1:0")
                    .config("viper.producer.staging.budget.bytes", Long.toString(4 * model.byteSize() + (1 << 20)));
            b.config("viper.transports", scheme.equals("file") ? "" : scheme + "://127.0.0.1:0");
            if (scheme.equals("file")) {
                b.pfsRoot(pfs);
            }
            List<Double> latencies = new ArrayList<>();
            List<Double> stalls = new ArrayList<>();
            boolean gpu = path.equals("gpu");
            try (DeviceBuffer onGpu = gpu ? toDevice(model) : null;
                 Viper viper = b.build(); ViperProducer producer = viper.producer("bench", CheckpointPolicy.never())) {
                Snapshot snapshot = gpu ? sink -> splitDevice(sink, onGpu) : sink -> split(sink, model);
                List<String> cmd = new ArrayList<>(List.of(javaBinary(), "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-Dviper.bench.verbose=" + verbose,
                        "-cp", System.getProperty("java.class.path"), BenchConsumerMain.class.getName()));
                if (poll) {
                    cmd.addAll(List.of("poll", pfs.resolve("bench").toString(), Long.toString(pollInterval.toMillis())));
                } else {
                    cmd.addAll(List.of("viper", viper.notifierUri().toString(), "bench", scheme));
                }
                Process child = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
                try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                    expect(r, "ready", child);
                    // Versions cycle through the staging buffers (kept versions + one filling) and the
                    // consumer's two receive buffers: the first use of each pays for page faults and,
                    // with UCX, for attaching the shared memory. Warm them all up before measuring.
                    int warmup = 4;
                    for (int i = 0; i < warmup + repeat; i++) {
                        long t0 = System.nanoTime();
                        PublishHandle h = producer.publish(snapshot, Map.of());
                        String line = expect(r, "swapped " + h.version(), child);
                        double ms = (System.nanoTime() - t0) / 1e6;
                        if (i >= warmup) {
                            latencies.add(ms);
                            stalls.add(h.stallNanos() / 1e6);
                        }
                        if (!line.endsWith(" " + scheme)) {
                            throw new ViperException(ViperException.Reason.INTERNAL, "consumer used another path than " + scheme + ": " + line);
                        }
                        h.durable().get(120, TimeUnit.SECONDS);
                    }
                } finally {
                    child.destroy();
                    child.waitFor(10, TimeUnit.SECONDS);
                }
            }
            double median = percentile(latencies, 0.5);
            ObjectNode o = new ObjectMapper().createObjectNode();
            o.put("path", path);
            o.put("transport", scheme);
            o.put("median_ms", round(median));
            o.put("p90_ms", round(percentile(latencies, 0.9)));
            o.put("gbps", round(model.byteSize() / (median / 1e3) / 1e9));
            o.put("stall_ms", round(percentile(stalls, 0.5)));
            var samples = o.putArray("samples_ms");
            latencies.forEach(l -> samples.add(round(l)));
            return o;
        }

        private static String expect(BufferedReader r, String prefix, Process child) throws IOException {
            while (true) {
                String line = r.readLine();
                if (line == null) {
                    throw new ViperException(ViperException.Reason.INTERNAL, "benchmark consumer exited (code "
                            + (child.isAlive() ? "?" : child.exitValue()) + ") before printing '" + prefix + "'");
                }
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
        }

        /** The model as 16 U8 tensors in GPU memory, as a training job on the GPU hands them over. */
        private static void splitDevice(Snapshot.TensorSink sink, DeviceBuffer model) {
            forEachPart(model.byteSize(), (i, off, len) ->
                    sink.addDevice("layer" + i + ".weight", DType.U8, new long[] {len}, model.pointer(off, len), model.device()));
        }

        private static GpuProvider gpuProvider() {
            return Providers.gpu().orElseThrow(() -> new ViperUnsupportedException("--paths gpu: no GPU provider is installed"));
        }

        /** A copy of {@code model} in memory of GPU 0; the caller closes it. */
        private static DeviceBuffer toDevice(MemorySegment model) {
            GpuProvider g = gpuProvider();
            DeviceBuffer d = g.allocate(0, model.byteSize());
            g.copyToDevice(0, model, d.devicePointer());
            return d;
        }

        /** The GPU bound: the fastest of 5 device-to-device copies of the model on GPU 0. */
        private static double deviceCopyMs(MemorySegment model) {
            GpuProvider g = gpuProvider();
            try (DeviceBuffer src = toDevice(model); DeviceBuffer dst = g.allocate(0, model.byteSize())) {
                List<Double> times = new ArrayList<>();
                for (int i = 0; i < 5; i++) {
                    long t0 = System.nanoTime();
                    g.copyDeviceToDevice(0, src.devicePointer(), dst.devicePointer(), model.byteSize());
                    times.add((System.nanoTime() - t0) / 1e6);
                }
                return times.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
            }
        }

        /** 16 U8 tensors, like the many tensors of a real model (hashing runs per tensor, in parallel). */
        private static void split(Snapshot.TensorSink sink, MemorySegment model) {
            forEachPart(model.byteSize(), (i, off, len) -> sink.add("layer" + i + ".weight", DType.U8, new long[] {len}, model.asSlice(off, len)));
        }

        private interface Part {
            void accept(int index, long offset, long length);
        }

        /** Splits {@code n} bytes into 16 parts (1 below 16 MiB), the last taking the remainder. */
        private static void forEachPart(long n, Part part) {
            int parts = n >= (16 << 20) ? 16 : 1;
            long chunk = n / parts;
            for (int i = 0; i < parts; i++) {
                long off = i * chunk;
                part.accept(i, off, i == parts - 1 ? n - off : chunk);
            }
        }

        private static double memcpyMs(MemorySegment model, Arena arena) {
            MemorySegment dst = arena.allocate(model.byteSize(), 4096);
            List<Double> times = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                long t0 = System.nanoTime();
                MemorySegment.copy(model, 0, dst, 0, model.byteSize());
                times.add((System.nanoTime() - t0) / 1e6);
            }
            return times.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
        }

        private static void fill(MemorySegment seg) {
            SplittableRandom rnd = new SplittableRandom(42);
            for (long i = 0; i + 8 <= seg.byteSize(); i += 8) {
                seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, rnd.nextLong());
            }
        }

        static double percentile(List<Double> values, double q) {
            double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
            if (v.length == 0) {
                return Double.NaN;
            }
            int idx = (int) Math.ceil(q * v.length) - 1;
            return v[Math.max(0, Math.min(v.length - 1, idx))];
        }

        private static double round(double d) {
            return Math.round(d * 1000) / 1000.0;
        }

        private static String javaBinary() {
            return ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        }

        private static void printTable(ObjectNode out) {
            double memcpy = out.get("memcpy_ms").asDouble();
            System.out.printf("model size %d bytes; memcpy (the bound) %.1f ms%n", out.get("size_bytes").asLong(), memcpy);
            if (out.has("d2d_ms")) {
                System.out.printf("device-to-device copy on GPU 0 (the bound of the gpu path) %.1f ms%n", out.get("d2d_ms").asDouble());
            }
            System.out.printf("%-10s %-9s %10s %10s %8s %9s %11s%n", "path", "transport", "median ms", "p90 ms", "GB/s", "x bound", "stall ms");
            for (var r : out.get("results")) {
                double bound = r.get("path").asText().equals("gpu") ? out.get("d2d_ms").asDouble() : memcpy;
                System.out.printf("%-10s %-9s %10.1f %10.1f %8.2f %9.1f %11.1f%n", r.get("path").asText(), r.get("transport").asText(),
                        r.get("median_ms").asDouble(), r.get("p90_ms").asDouble(), r.get("gbps").asDouble(),
                        r.get("median_ms").asDouble() / bound, r.get("stall_ms").asDouble());
            }
        }
    }
}
