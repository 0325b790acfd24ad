package io.viper.cli;

import io.viper.demo.DemoPlan;
import io.viper.demo.DemoPlot;
import io.viper.demo.DemoPolicy;
import io.viper.demo.DemoReport;
import io.viper.demo.DemoResult;
import io.viper.demo.DemoRunner;
import io.viper.demo.DemoSettings;
import io.viper.demo.DemoTransport;
import io.viper.demo.DemoWorkload;
import io.viper.demo.Replay;
import io.viper.demo.SeedSweep;
import io.viper.demo.StatusLine;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.predictor.CostModel;
import io.viper.scheduler.Objective;
import java.io.Console;
import java.io.PrintWriter;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code viper demo}: the whole product on one machine. A producer process trains the digits network on a continual
 * stream and publishes through Viper; a consumer process answers a fixed-rate stream of requests with the model it
 * holds and measures their real loss. The same run is repeated under several checkpoint policies (each in fresh
 * processes, same seed, same requests, the same budget of checkpoints), and a table says which policy served the lowest
 * cumulative inference loss (CIL), over several request replicas, next to what was predicted and to the best schedule
 * in hindsight.
 *
 * <p>This command checks the options and prints the result; planning, the processes and the report are module
 * viper-demo's ({@link DemoRunner}, {@link DemoReport}, {@link DemoPlot}).
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description =
                "Runs a continual-learning workload (a producer process training, a consumer process serving) under "
                        + "several checkpoint policies with the same budget of checkpoints and shows which served the"
                        + " lowest cumulative "
                        + "inference loss (CIL).")
public final class DemoCommand implements Callable<Integer> {
    /** Smile logs every Levenberg-Marquardt iteration at INFO; kept here so the level sticks. */
    private static final Logger SMILE_LOG = Logger.getLogger("smile");

    @Spec
    CommandSpec spec;

    @Option(
            names = "--policies",
            paramLabel = "LIST",
            completionCandidates = PolicyNames.class,
            description =
                    "Policies to run, comma-separated, from ${COMPLETION-CANDIDATES} (default: all, in that order)")
    String policies;

    @Option(
            names = "--workload",
            paramLabel = "NAME",
            defaultValue = "stages",
            description = "stages (digits arrive in four stages, images rotate), stationary (all digits from the start)"
                    + " or drift (all digits from the start, images rotate steadily to 90 deg)"
                    + " (default: ${DEFAULT-VALUE})")
    String workload;

    @Option(
            names = "--budget",
            paramLabel = "K",
            description = "Checkpoints every scheduled policy may take (default: as many as epoch takes)")
    Integer budget;

    @Option(
            names = "--objective",
            paramLabel = "NAME",
            defaultValue = "staleness",
            description =
                    "What the scheduler charges a request: staleness (the loss grows with the version's age) or viper"
                            + " (its training loss) "
                            + "(default: ${DEFAULT-VALUE})")
    String objective;

    @Option(
            names = "--replicas",
            paramLabel = "R",
            defaultValue = "" + DemoSettings.DEFAULT_REPLICAS,
            description = "Independent request sets each run is scored on (default: ${DEFAULT-VALUE})")
    int replicas;

    @Option(
            names = "--iterations",
            paramLabel = "E",
            defaultValue = "2000",
            description = "Training iterations e; the stream changes over them (default: ${DEFAULT-VALUE})")
    long iterations;

    @Option(
            names = "--warmup",
            paramLabel = "S",
            description =
                    "Warm-up iterations s before the consumer starts; the curve is fitted on them (default: e / 10)")
    Long warmup;

    @Option(
            names = "--pace",
            paramLabel = "DURATION",
            defaultValue = "5ms",
            description = "Training time per iteration (the producer sleeps when ahead); also t_train (default:"
                    + " ${DEFAULT-VALUE})")
    String pace;

    @Option(
            names = "--rate",
            paramLabel = "PER_S",
            defaultValue = "400",
            description = "Inference requests per second (default: ${DEFAULT-VALUE})")
    double rate;

    @Option(
            names = "--transport",
            paramLabel = "NAME",
            description =
                    "inline (inside the announcement), host (or ucx), tcp or pfs (or file): how checkpoints travel"
                            + " (default: inline)")
    String transport;

    @Option(
            names = "--notifier",
            paramLabel = "URI",
            description = "Notifier both processes use (default: an embedded broker the producer hosts on a free port)")
    String notifier;

    @Option(
            names = "--seed",
            paramLabel = "N",
            defaultValue = "42",
            description = "Seed of the data, the weights and the requests (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(
            names = "--seeds",
            paramLabel = "N",
            description = "Replay the policies in this process on N seeds (--seed, --seed + 1, ...) instead of running"
                    + " the processes, and print per policy the mean, median, worst and spread of its CIL relative to"
                    + " hindsight's (a few seconds per seed)")
    Integer seeds;

    @Option(
            names = "--latency",
            paramLabel = "DURATION",
            defaultValue = "2ms",
            description = "With --seeds: the update latency, from a publish to the consumer serving it, that the"
                    + " replay assumes (the demo measures about 2 ms at the 90th percentile) (default:"
                    + " ${DEFAULT-VALUE})")
    String latency;

    @Option(names = "--json", description = "Print one JSON object instead of the table")
    boolean json;

    @Option(
            names = "--plot",
            paramLabel = "FILE.png",
            description = "Draw the loss of served requests over time per policy, checkpoints marked")
    Path plot;

    /** The names {@code --policies} takes, in the default order. */
    static final class PolicyNames implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return DemoPolicy.ALL.stream().map(DemoPolicy::displayName).iterator();
        }
    }

    @Override
    public Integer call() throws Exception {
        SMILE_LOG.setLevel(Level.WARNING);
        DemoSettings s = validate();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (seeds != null) {
            return sweep(s, out);
        }
        DemoResult result =
                new DemoRunner(s, new StatusLine(err, liveTerminal())).run(System.getenv("VIPER_DEBUG") != null);
        if (json) {
            out.println(DemoReport.json(result));
        } else {
            DemoReport.table(out, result);
        }
        if (plot != null) {
            DemoPlot.write(plot, result);
            if (!json) {
                out.println("plot: " + plot);
            }
        }
        out.flush();
        result.logs().ifPresent(dir -> err.println("viper: demo: process logs kept in " + dir));
        return 0;
    }

    private int sweep(DemoSettings s, PrintWriter out) {
        if (seeds < 1 || seeds > 1000) {
            throw new ViperConfigException("--seeds " + seeds + " is outside 1..1000");
        }
        if (json || plot != null) {
            throw new ViperConfigException("--seeds prints a table only: drop --json and --plot");
        }
        double lat = Durations.parse(latency).toNanos() / 1e9;
        if (!(lat >= 0 && lat <= 10)) {
            throw new ViperConfigException("--latency " + latency + " is outside 0..10s");
        }
        double tSave = CostModel.defaults().saveSeconds(s.transport().path(), DemoPlan.modelBytes(s));
        long[] seed = {s.seed()};
        List<Replay.Result> results = SeedSweep.run(s, seeds, tSave, lat, r -> {
            out.println(SeedSweep.seedLine(seed[0]++, r));
            if (System.getenv("VIPER_DEBUG") != null) {
                out.print(SeedSweep.details(r));
            }
            out.flush();
        });
        SeedSweep.table(out, s, results, lat);
        out.flush();
        return 0;
    }

    /** The options as settings, or a {@link ViperConfigException} naming the first bad one. */
    DemoSettings validate() {
        List<DemoPolicy> wanted = parsePolicies();
        if (iterations < 20 || iterations > 1_000_000) {
            throw new ViperConfigException("--iterations " + iterations + " is outside 20..1000000");
        }
        long s = warmup != null ? warmup : Math.max(10, iterations / 10);
        if (s < 10 || s >= iterations) {
            throw new ViperConfigException("--warmup " + s
                    + " must be at least 10 (the curve is fitted on it) and less than --iterations " + iterations);
        }
        long paceNanos = Durations.parse(pace).toNanos();
        if (paceNanos < 100_000 || paceNanos > 1_000_000_000) {
            throw new ViperConfigException("--pace " + pace + " is outside 100us..1s (e.g. 5ms)");
        }
        if (!(rate >= 1 && rate <= 20_000)) {
            throw new ViperConfigException("--rate " + rate + " is outside 1..20000 requests per second");
        }
        DemoTransport t = parseTransport();
        String n = parseNotifier();
        if (plot != null) {
            String name = plot.getFileName() == null
                    ? ""
                    : plot.getFileName().toString().toLowerCase(Locale.ROOT);
            if (!name.endsWith(".png")) {
                throw new ViperConfigException("--plot " + plot + ": the file name must end in .png");
            }
            SchedulePlot.checkPath(plot);
        }
        if (budget != null && (budget < 1 || budget > iterations - s)) {
            throw new ViperConfigException("--budget " + budget + " is outside 1.." + (iterations - s)
                    + " (one checkpoint per iteration after the warm-up at most)");
        }
        if (replicas < 1 || replicas > 64) {
            throw new ViperConfigException("--replicas " + replicas + " is outside 1..64");
        }
        DemoSettings st = new DemoSettings(
                wanted,
                iterations,
                s,
                paceNanos,
                rate,
                t,
                n,
                seed,
                DemoWorkload.parse(workload),
                budget == null ? OptionalInt.empty() : OptionalInt.of(budget),
                parseObjective(),
                replicas);
        if (st.requests() < 1) {
            throw new ViperConfigException("--rate " + rate + " with --pace " + pace + " over " + (iterations - s)
                    + " iterations serves no request; raise --rate or --iterations");
        }
        if (st.runSeconds() * wanted.size() > 3600) {
            throw new ViperConfigException(String.format(
                    Locale.ROOT,
                    "the runs would take %.0f s (--iterations x --pace x policies); keep it under an hour",
                    st.runSeconds() * wanted.size()));
        }
        return st;
    }

    private List<DemoPolicy> parsePolicies() {
        if (policies == null) {
            return DemoPolicy.ALL;
        }
        List<DemoPolicy> wanted = new ArrayList<>();
        for (String p : policies.split(",")) {
            if (p.isBlank()) {
                continue;
            }
            DemoPolicy a = DemoPolicy.parse(p);
            if (wanted.contains(a)) {
                throw new ViperConfigException("--policies: '" + a.displayName() + "' is given twice");
            }
            wanted.add(a);
        }
        if (wanted.isEmpty()) {
            throw new ViperConfigException("--policies: give at least one of " + DemoPolicy.names());
        }
        return wanted;
    }

    private Objective parseObjective() {
        try {
            return Objective.parse(objective);
        } catch (ViperConfigException e) {
            throw new ViperConfigException("--objective: " + e.getMessage());
        }
    }

    private DemoTransport parseTransport() {
        if (transport == null) {
            return DemoTransport.preferred();
        }
        DemoTransport t = DemoTransport.byName(transport)
                .orElseThrow(() ->
                        new ViperConfigException("--transport '" + transport + "': expected " + DemoTransport.names()));
        Optional<String> why = t.unavailableReason();
        if (why.isPresent()) {
            throw new ViperUnsupportedException(
                    "--transport " + t.displayName() + ": " + why.get() + " (use --transport tcp)");
        }
        return t;
    }

    private String parseNotifier() {
        String n = notifier == null ? "embedded://127.0.0.1:0" : notifier.strip();
        try {
            URI u = new URI(n);
            if (u.getScheme() == null || u.getHost() == null) {
                throw new URISyntaxException(n, "expected scheme://host:port");
            }
            if (u.getScheme().equalsIgnoreCase("embedded") && u.getPort() < 0) {
                throw new URISyntaxException(n, "an embedded notifier needs a port (0 picks a free one)");
            }
        } catch (URISyntaxException e) {
            throw new ViperConfigException("--notifier '" + n + "' is not a notifier address: " + e.getReason()
                    + " (e.g. embedded://127.0.0.1:0, kafka://host:9092)");
        }
        return n;
    }

    private static boolean liveTerminal() {
        if (System.getenv("VIPER_STDERR_TTY") != null) {
            return true;
        }
        @SuppressWarnings("SystemConsoleNull") // still null where no console provider loads (-Djdk.console)
        Console c = System.console();
        return c != null && c.isTerminal();
    }
}
