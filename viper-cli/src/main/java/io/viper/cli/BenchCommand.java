package io.viper.cli;

import io.viper.cli.bench.BenchReport;
import io.viper.cli.bench.TransferBench;
import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.spi.Providers;
import io.viper.spi.TransportProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;
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
     * {@code viper bench transfer}: a producer here, a consumer in a second JVM; per path and model
     * size the update latency from {@code publish} called to the consumer's swap, against one
     * in-process memcpy of the same size measured in the same run ({@link TransferBench}), and with
     * {@code pfs} the PFS with a polling consumer.
     */
    @Command(name = "transfer", mixinStandardHelpOptions = true,
            description = {"Update latency per path and model size between two processes, against one memcpy of the model (the bound)",
                "and, with pfs, the PFS with a consumer polling every second (the baseline users have today)."})
    static final class Transfer implements Callable<Integer> {
        @Option(names = "--size", paramLabel = "SIZE", description = "Model size (k, m, g suffixes; default: 256m unless --sizes is given)")
        String size;

        @Option(names = "--sizes", paramLabel = "SIZES", split = ",",
                description = "Model sizes to sweep, smallest first (e.g. 16k,256k,4m,64m,1g): one row per size and path")
        List<String> sizes;

        @Option(names = "--paths", paramLabel = "PATHS", defaultValue = "host,tcp,pfs",
                description = "Paths to measure: host (UCX shared memory/RDMA), tcp, pfs (PFS with push notification, and the polling baseline), gpu (default: ${DEFAULT-VALUE})")
        String paths;

        @Option(names = "--repeat", paramLabel = "N", defaultValue = "5", description = "Measured updates per path and size (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(names = "--warmup", paramLabel = "DURATION", defaultValue = "5s", converter = Durations.class,
                description = "Warm-up per path and size before measuring: at least " + TransferBench.MIN_WARMUP + " updates and this long"
                        + " (" + TransferBench.FIRST_WARMUP_FACTOR + " times for a path's first size), at most " + TransferBench.MAX_WARMUP
                        + " updates (default: ${DEFAULT-VALUE})")
        java.time.Duration warmup;

        @Option(names = "--poll-interval", paramLabel = "DURATION", defaultValue = "1s", converter = Durations.class,
                description = "Polling interval of the baseline consumer (default: ${DEFAULT-VALUE})")
        java.time.Duration pollInterval;

        @Option(names = "--no-baseline", description = "Skip the PFS polling baseline")
        boolean noBaseline;

        @Option(names = "--dir", paramLabel = "DIR", description = "Where the PFS repository lives (default: a temporary directory)")
        Path dir;

        @Option(names = "--json", description = "Print one JSON object (every sample included) instead of a table")
        boolean json;

        @Option(names = "--plot", paramLabel = "FILE", description = "Also draw latency against size (log-log, one line per path) into FILE (.png or .svg)")
        Path plot;

        @Option(names = {"-v", "--verbose"}, description = "Log what Viper does on stderr")
        boolean verbose;

        @Override
        public Integer call() throws Exception {
            CliLogging.configure(verbose);
            List<Long> bytes = sizes();
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
            if (plot != null) {
                ChartFiles.checkPath(plot);
            }
            if (wanted.contains("pfs") && !noBaseline) {
                wanted.add("pfs-poll");
            }
            Path root = dir != null ? dir : Files.createTempDirectory("viper-bench");
            TransferBench.Result result = new TransferBench(new TransferBench.Settings(bytes, wanted, repeat, warmup, pollInterval, root, verbose,
                    line -> {
                        if (!json) {
                            System.err.println(line);
                        }
                    })).run();
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
                long b = ConfigValues.parseSize(s.strip());
                if (b < 1024) {
                    throw new ViperConfigException((sizes != null ? "--sizes: " : "--size ") + s.strip() + " is too small (at least 1k)");
                }
                if (!out.isEmpty() && b <= out.getLast()) {
                    throw new ViperConfigException("--sizes " + String.join(",", given) + ": sizes must grow from left to right");
                }
                out.add(b);
            }
            return out;
        }
    }
}
