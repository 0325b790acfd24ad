package io.viper.cli;

import com.sun.management.OperatingSystemMXBean;
import io.viper.TransferPath;
import io.viper.ViperConfig;
import io.viper.cli.bench.BenchReport;
import io.viper.cli.bench.RepositoryBench;
import io.viper.cli.bench.TransferBench;
import io.viper.cli.bench.TransferSettings;
import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.manifest.Tier;
import io.viper.spi.Providers;
import io.viper.spi.TransportProvider;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code viper bench}: benchmarks of the real data path. */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Benchmarks of the real data path.",
        subcommands = {
            BenchCommand.Transfer.class,
            BenchCommand.Repository.class,
            BenchFleetCommand.class,
            BenchPfsCommand.class
        })
final class BenchCommand implements Runnable {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /**
     * {@code viper bench transfer}: a producer here, a consumer in a second JVM; per path and model size the update
     * latency from {@code publish} called to the consumer's swap, against an in-process memcpy of the same size (for
     * large sizes measured right after each update: {@link TransferBench}), and with {@code pfs} the PFS with a polling
     * consumer.
     */
    @Command(
            name = "transfer",
            mixinStandardHelpOptions = true,
            description = {
                "Update latency per path and model size between two processes, against a memcpy of the model.",
                "The bound: from 1 ms of copying up, a memcpy right after each update; below, one before the paths"
                        + " run.",
                "With pfs, also the PFS with a consumer polling every second (the baseline users have today)."
            })
    static final class Transfer implements Callable<Integer> {
        @Option(
                names = "--size",
                paramLabel = "SIZE",
                description = "Model size (k, m, g suffixes; default: 256m unless --sizes is given)")
        String size;

        @Option(
                names = "--sizes",
                paramLabel = "SIZES",
                split = ",",
                description =
                        "Model sizes to sweep, smallest first (e.g. 16k,256k,4m,64m,1g): one row per size and path")
        List<String> sizes;

        @Option(
                names = "--paths",
                paramLabel = "PATHS",
                defaultValue = "inline,host,tcp,pfs",
                description =
                        "Paths to measure: inline (the model's bytes inside its announcement, for sizes up to 1m),"
                                + " host (or ucx: UCX shared memory/RDMA), tcp, pfs (or file: PFS with push"
                                + " notification, and the polling baseline), gpu (or cuda-ipc: GPU to GPU on"
                                + " one node), gpu-pipe (or cuda-pipe: GPU to GPU over TCP, across"
                                + " nodes) (default: ${DEFAULT-VALUE})")
        String paths;

        @Option(
                names = "--repeat",
                paramLabel = "N",
                defaultValue = "5",
                description = "Measured updates per path and size (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(
                names = "--warmup",
                paramLabel = "DURATION",
                defaultValue = "5s",
                converter = Durations.class,
                description = "Warm-up per path and size before measuring: at least " + TransferBench.MIN_WARMUP
                        + " updates and this long"
                        + " (" + TransferBench.FIRST_WARMUP_FACTOR + " times for a path's first size), at most "
                        + TransferBench.MAX_WARMUP
                        + " updates (default: ${DEFAULT-VALUE})")
        Duration warmup;

        @Option(
                names = "--interval",
                paramLabel = "DURATION",
                defaultValue = "0",
                converter = Durations.class,
                description =
                        "Pause before each measured update, e.g. 200ms: updates that come alone, as a training job"
                                + " publishes them,"
                                + " with the data path gone cold in between (the warm-up stays back to back; at most"
                                + " 60s; default: 0, back to back)")
        Duration interval;

        @Option(
                names = "--poll-interval",
                paramLabel = "DURATION",
                defaultValue = "1s",
                converter = Durations.class,
                description = "Polling interval of the baseline consumer (default: ${DEFAULT-VALUE})")
        Duration pollInterval;

        @Option(names = "--no-baseline", description = "Skip the PFS polling baseline")
        boolean noBaseline;

        @Option(
                names = "--changed",
                paramLabel = "PERCENT",
                description = "Also measure updates where only this share of the model's blocks changed (e.g. 2%%): a"
                        + " second row per path and size,"
                        + " beside the full update (every block changed); rows show the bytes the consumer"
                        + " moved and reused")
        String changed;

        @Option(
                names = "--declare-changes",
                description = "The producer is told which bytes changed since its last publish (Snapshot.Changes), as"
                        + " training that knows what it wrote"
                        + " would tell it, instead of comparing the model with its staging buffer")
        boolean declareChanges;

        @Option(
                names = "--block-bytes",
                paramLabel = "SIZE",
                defaultValue = "1m",
                description =
                        "The producer's viper.block.bytes (0: no blocks, every update moves the whole model; default:"
                                + " ${DEFAULT-VALUE})")
        String blockBytes;

        @Option(
                names = "--dir",
                paramLabel = "DIR",
                description = "Where the PFS repository lives (default: a temporary directory)")
        Path dir;

        @Option(
                names = "--producer-config",
                paramLabel = "KEY=VALUE",
                description = "A key of the producer's configuration (repeatable; see viper config), e.g."
                        + " viper.producer.copy.threads=1;"
                        + " not the keys the bench sets per path (viper.notifier, viper.transports,"
                        + " viper.pfs.root, viper.block.bytes,"
                        + " viper.producer.inline.bytes, viper.producer.staging.budget.bytes)")
        Map<String, String> producerConfig = new LinkedHashMap<>();

        @Option(
                names = "--consumer-config",
                paramLabel = "KEY=VALUE",
                description = "A key of the consumer's configuration, in its process (repeatable), e.g."
                        + " viper.ucx.mapped=false;"
                        + " not the keys the bench sets (viper.notifier, viper.pfs.root,"
                        + " viper.consumer.paths, viper.consumer.host.budget.bytes,"
                        + " viper.consumer.device, viper.consumer.gpu.budget.bytes)")
        Map<String, String> consumerConfig = new LinkedHashMap<>();

        @Option(names = "--json", description = "Print one JSON object (every sample included) instead of a table")
        boolean json;

        @Option(
                names = "--plot",
                paramLabel = "FILE",
                description = "Also draw latency against size (log-log, one line per path) into FILE (.png or .svg)")
        Path plot;

        @Option(
                names = {"-v", "--verbose"},
                description = "Log what Viper does on stderr")
        boolean verbose;

        @Override
        public Integer call() throws Exception {
            CliLogging.configure(verbose);
            List<Long> bytes = sizes();
            if (repeat < 1 || repeat > 1000) {
                throw new ViperConfigException("--repeat " + repeat + " must be between 1 and 1000");
            }
            checkMemory(
                    sizes != null ? "--sizes" : "--size",
                    bytes.getLast(),
                    TransferBench.MODEL_COPIES,
                    "the model, its memcpy's target, " + TransferBench.STAGING_BUFFERS
                            + " staging and 2 receive buffers");
            List<String> given =
                    Arrays.stream(paths.split(",", -1)).map(String::strip).toList();
            if (given.contains("")) {
                // An empty list measured nothing and printed a table's header: a typo, not a wish.
                throw new ViperConfigException(
                        "--paths '" + paths + "': " + (paths.isBlank() ? "no path" : "an empty entry") + " (use "
                                + TransferPath.names(List.of(TransferPath.values())) + ")");
            }
            Set<TransferPath> wanted = new LinkedHashSet<>();
            for (String name : given) {
                wanted.add(named("--paths", () -> TransferPath.parse(name)));
            }
            for (TransferPath p : wanted) {
                if (p.tier() == Tier.GPU) {
                    Optional<TransportProvider> t = Providers.transport(p.scheme());
                    String why = t.isEmpty()
                            ? "no GPU transport is installed"
                            : t.get().unavailableReason().orElse(null);
                    if (why == null && Providers.gpu().isEmpty()) {
                        why = "no GPU provider is installed";
                    }
                    if (why != null) {
                        throw new ViperUnsupportedException("--paths " + p + ": " + why);
                    }
                }
            }
            if (plot != null) {
                ChartFiles.checkPath(plot);
            }
            List<Double> fractions = changed == null ? List.of(1.0) : List.of(1.0, parsePercent("--changed", changed));
            long block = blockBytes(blockBytes);
            Path root = dir != null ? checkDir(dir) : Files.createTempDirectory("viper-bench");
            TransferBench.Result result;
            try {
                result = new TransferBench(new TransferSettings(
                                bytes,
                                List.copyOf(wanted),
                                !noBaseline,
                                repeat,
                                warmup,
                                pollInterval,
                                root,
                                verbose,
                                line -> {
                                    if (!json) {
                                        System.err.println(line);
                                    }
                                },
                                fractions,
                                block,
                                producerConfig,
                                consumerConfig,
                                interval,
                                declareChanges))
                        .run();
            } finally {
                if (dir == null) {
                    deleteTree(root);
                }
            }
            if (json) {
                System.out.println(BenchReport.json(result));
            } else {
                BenchReport.printTable(result, System.out);
            }
            if (plot != null) {
                BenchPlot.write(plot, result);
            }
            return 0;
        }

        /** {@code --sizes}, else {@code --size}, else 256m; each at least 1k. */
        private List<Long> sizes() {
            if (sizes != null && size != null) {
                throw new ViperConfigException("--size and --sizes: give one of them");
            }
            List<String> given = sizes != null ? sizes : List.of(size != null ? size : "256m");
            List<Long> out = new ArrayList<>();
            for (String s : given) {
                long b = named(sizes != null ? "--sizes" : "--size", () -> ConfigValues.parseSize(s.strip()));
                if (b < 1024) {
                    throw new ViperConfigException(
                            (sizes != null ? "--sizes: " : "--size ") + s.strip() + " is too small (at least 1k)");
                }
                if (!out.isEmpty() && b <= out.getLast()) {
                    throw new ViperConfigException(
                            "--sizes " + String.join(",", given) + ": sizes must grow from left to right");
                }
                out.add(b);
            }
            return out;
        }
    }

    /**
     * {@code viper bench repository}: the PFS repository's size for versions of a model of which a share of blocks
     * changes each time ({@link RepositoryBench}), against one version.
     */
    @Command(
            name = "repository",
            mixinStandardHelpOptions = true,
            description = "Size on disk of a PFS repository holding VERSIONS versions of a model, a share of its blocks"
                    + " changing each time, in versions of the model.")
    static final class Repository implements Callable<Integer> {
        @Option(
                names = "--size",
                paramLabel = "SIZE",
                defaultValue = "256m",
                description = "Model size (default: ${DEFAULT-VALUE})")
        String size;

        @Option(
                names = "--versions",
                paramLabel = "N",
                defaultValue = "10",
                description = "Versions stored, all kept (default: ${DEFAULT-VALUE})")
        int versions;

        @Option(
                names = "--changed",
                paramLabel = "PERCENT",
                defaultValue = "5%",
                description = "Share of blocks changed between versions (default: ${DEFAULT-VALUE})")
        String changed;

        @Option(
                names = "--block-bytes",
                paramLabel = "SIZE",
                defaultValue = "1m",
                description = "The producer's viper.block.bytes (0: every version a whole safetensors file; default:"
                        + " ${DEFAULT-VALUE})")
        String blockBytes;

        @Option(
                names = "--dir",
                paramLabel = "DIR",
                description =
                        "An empty or missing directory for the repository (default: a temporary one, removed after)")
        Path dir;

        @Option(names = "--json", description = "Print one JSON object instead of a line")
        boolean json;

        @Override
        public Integer call() throws Exception {
            long bytes = named("--size", () -> ConfigValues.parseSize(size));
            if (bytes < 1024) {
                throw new ViperConfigException("--size " + size + " is too small (at least 1k)");
            }
            checkMemory(
                    "--size",
                    bytes,
                    RepositoryBench.MODEL_COPIES,
                    "the model and " + RepositoryBench.STAGING_BUFFERS + " staging buffers");
            if (versions < 1 || versions > 1000) {
                throw new ViperConfigException("--versions " + versions + " must be between 1 and 1000");
            }
            double share = parsePercent("--changed", changed);
            long block = blockBytes(blockBytes);
            Path root = dir != null ? checkDir(dir) : Files.createTempDirectory("viper-bench-repo");
            if (Files.isDirectory(root)) {
                try (var entries = Files.list(root)) {
                    if (entries.findAny().isPresent()) {
                        throw new ViperConfigException("--dir " + root + ": not empty");
                    }
                }
            }
            try {
                RepositoryBench.Result r = new RepositoryBench(bytes, versions, share, block, root).run();
                if (json) {
                    System.out.printf(
                            Locale.ROOT,
                            "{\"size_bytes\":%d,\"versions\":%d,\"changed\":%s,\"block_bytes\":%d,"
                                    + "\"repository_bytes\":%d,"
                                    + "\"block_store_bytes\":%d,\"in_versions\":%.3f}%n",
                            r.size(),
                            r.versions(),
                            r.changed(),
                            r.blockBytes(),
                            r.repositoryBytes(),
                            r.blockStoreBytes(),
                            r.inVersions());
                } else {
                    System.out.printf(
                            Locale.ROOT,
                            "%d versions of %s, %s of blocks changed each time (blocks of %s): repository %d bytes ="
                                    + " %.2f versions"
                                    + " (block store %d bytes)%n",
                            r.versions(),
                            BenchReport.size(r.size()),
                            BenchReport.percent(r.changed()),
                            BenchReport.size(r.blockBytes()),
                            r.repositoryBytes(),
                            r.inVersions(),
                            r.blockStoreBytes());
                }
            } finally {
                if (dir == null) {
                    deleteTree(root);
                }
            }
            return 0;
        }
    }

    /**
     * Refuses a model of {@code bytes} that the machine's memory cannot hold {@code copies} times, as the bench does at
     * once ({@code what}): the allocation failed only once the run had started, or the machine swapped.
     */
    static void checkMemory(String flag, long bytes, int copies, String what) {
        long total = ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getTotalMemorySize();
        if (bytes > total / copies) {
            throw new ViperConfigException(String.format(
                    Locale.ROOT,
                    "%s %s: the bench needs about %d x %s of memory (%s), this machine has %.1f GiB",
                    flag,
                    BenchReport.size(bytes),
                    copies,
                    BenchReport.size(bytes),
                    what,
                    total / (double) (1L << 30)));
        }
    }

    /**
     * {@code --dir}, refused when it is a file: the bench failed on it only once it had started (made when missing).
     */
    static Path checkDir(Path dir) {
        if (Files.exists(dir) && !Files.isDirectory(dir)) {
            throw new ViperConfigException("--dir " + dir + ": not a directory");
        }
        return dir;
    }

    /** {@code --block-bytes}, checked as {@code viper.block.bytes} is before the bench starts anything. */
    private static long blockBytes(String value) {
        return named("--block-bytes", () -> ViperConfig.BLOCK_BYTES.parse(value));
    }

    /** What {@code parse} returns; its refusal names {@code flag}, as the parsers' messages name only the value. */
    static <T> T named(String flag, Supplier<T> parse) {
        try {
            return parse.get();
        } catch (ViperConfigException e) {
            throw new ViperConfigException(flag + ": " + e.getMessage(), e);
        }
    }

    /** Removes a temporary directory the bench made, with everything the runs left in it. */
    static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (var files = Files.walk(root)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** A share written as {@code 2%} or {@code 0.02}, above 0 and at most 100%. */
    static double parsePercent(String flag, String value) {
        String v = value.strip();
        double d;
        try {
            d = v.endsWith("%")
                    ? Double.parseDouble(v.substring(0, v.length() - 1).strip()) / 100
                    : Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new ViperConfigException(flag + " " + value + ": not a share (write 2% or 0.02)");
        }
        if (!(d > 0 && d <= 1)) {
            throw new ViperConfigException(flag + " " + value + ": must be above 0% and at most 100%");
        }
        return d;
    }
}
