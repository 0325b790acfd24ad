package io.viper.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.examples.demo.DemoConsumer;
import io.viper.examples.demo.DemoProducer;
import io.viper.examples.digits.Mlp;
import io.viper.examples.digits.Trainer;
import io.viper.predictor.CostModel;
import io.viper.predictor.CurveFitter;
import io.viper.predictor.FitResult;
import io.viper.scheduler.Schedule;
import io.viper.scheduler.ScheduleInput;
import io.viper.scheduler.CheckpointPlanner;
import io.viper.spi.TransportProvider;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.Writer;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code viper demo}: the whole product on one machine. A producer process trains the digits network
 * on a continual stream and publishes through Viper; a consumer process answers a fixed-rate stream of
 * requests with the model it holds and measures their real loss. The same run is repeated under
 * several checkpoint policies (each in fresh processes, same seed, same requests), and a table says
 * which policy served the lowest cumulative inference loss (CIL), next to what the scheduler
 * predicted.
 *
 * <p>The plan: this process trains the deterministic warm-up (iterations 1..s) itself, fits the
 * loss curve on it, takes {@code t_train} from the pace, {@code t_infer} from the request rate and
 * {@code t_s}, {@code t_load} from the transfer cost model, and computes every policy's checkpoint
 * iterations; each producer repeats the same warm-up and publishes at exactly those iterations.
 */
@Command(name = "demo", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Runs a continual-learning workload (a producer process training, a consumer process serving) under "
                + "several checkpoint policies and shows which served the lowest cumulative inference loss (CIL).")
public final class DemoCommand implements java.util.concurrent.Callable<Integer> {
    /** Every policy, in the default order. */
    static final List<String> ALL_POLICIES = List.of("epoch", "fixed", "adaptive", "optimal", "none");
    /** Smile logs every Levenberg-Marquardt iteration at INFO; kept here so the level sticks. */
    private static final Logger SMILE_LOG = Logger.getLogger("smile");
    /** The cap on checkpoints given to fixed, adaptive and optimal. */
    static final int MAX_CHECKPOINTS = CheckpointPlanner.DEFAULT_MAX_CHECKPOINTS;

    @Spec
    CommandSpec spec;

    @Option(names = "--policies", paramLabel = "LIST", defaultValue = "epoch,fixed,adaptive,optimal,none",
            description = "Policies to run, comma-separated, from epoch, fixed, adaptive, optimal, none (default: ${DEFAULT-VALUE})")
    String policies;

    @Option(names = "--iterations", paramLabel = "E", defaultValue = "2000",
            description = "Training iterations e; the stream changes over them (default: ${DEFAULT-VALUE})")
    long iterations;

    @Option(names = "--warmup", paramLabel = "S",
            description = "Warm-up iterations s before the consumer starts; the curve is fitted on them (default: e / 10)")
    Long warmup;

    @Option(names = "--pace", paramLabel = "DURATION", defaultValue = "5ms",
            description = "Training time per iteration (the producer sleeps when ahead); also t_train (default: ${DEFAULT-VALUE})")
    String pace;

    @Option(names = "--rate", paramLabel = "PER_S", defaultValue = "400",
            description = "Inference requests per second (default: ${DEFAULT-VALUE})")
    double rate;

    @Option(names = "--transport", paramLabel = "NAME",
            description = "ucx, tcp or file: how checkpoints travel (default: ucx if available, else tcp)")
    String transport;

    @Option(names = "--notifier", paramLabel = "URI",
            description = "Notifier both processes use (default: an embedded broker the producer hosts on a free port)")
    String notifier;

    @Option(names = "--seed", paramLabel = "N", defaultValue = "42",
            description = "Seed of the data, the weights and the requests (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--json", description = "Print one JSON object instead of the table")
    boolean json;

    @Option(names = "--plot", paramLabel = "FILE.png", description = "Draw the loss of served requests over time per policy, checkpoints marked")
    Path plot;

    /** The validated settings of one demo. */
    record Settings(List<String> policies, long end, long warmup, long paceNanos, double rate, String transport,
                    String notifier, long seed) {
        int requests() {
            return DemoConsumer.requestCount(end, warmup, paceNanos, rate);
        }

        double runSeconds() {
            return (end - warmup) * paceNanos / 1e9;
        }
    }

    /** What the scheduler planned. */
    record Plan(FitResult fit, ScheduleInput input, long epochIters, int trainImages, double adaptiveThreshold,
                Map<String, Schedule> schedules, long modelBytes, String costPath) {}

    /** What one policy's run measured. */
    record Outcome(String name, Schedule schedule, int checkpoints, long[] publishedIterations, double cil, int requests,
                   double accuracy, int swaps, double updateMsMean, double updateMsP90, double stallMs, String path,
                   double maxLateMs, double[] losses, double seconds) {}

    @Override
    public Integer call() throws Exception {
        CliLogging.configure(false);
        SMILE_LOG.setLevel(Level.WARNING);
        Settings s = validate();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Status status = new Status(err, liveTerminal());
        long t0 = System.nanoTime();

        status.line(String.format(Locale.ROOT, "demo: %d iterations (warm-up %d) at %s each, %.0f requests/s, transport %s, policies %s",
                s.end(), s.warmup(), fmtDuration(s.paceNanos()), s.rate(), s.transport(), String.join(",", s.policies())));
        Plan plan = plan(s);
        List<Outcome> outcomes = new ArrayList<>();
        Path work = Files.createTempDirectory("viper-demo");
        for (int i = 0; i < s.policies().size(); i++) {
            String name = s.policies().get(i);
            Outcome o = run(s, plan, name, i, work, status);
            outcomes.add(o);
            status.line(String.format(Locale.ROOT, "  %-9s %4d checkpoints  CIL %9.2f (predicted %9.2f)  accuracy %5.1f%%  (%.1f s)",
                    name, o.checkpoints(), o.cil(), o.schedule().cil(), 100 * o.accuracy(), o.seconds()));
        }
        double total = (System.nanoTime() - t0) / 1e9;
        if (json) {
            out.println(json(s, plan, outcomes, total));
        } else {
            printTable(out, s, plan, outcomes, total);
        }
        if (plot != null) {
            DemoPlot.write(plot, s, outcomes);
            if (!json) {
                out.println("plot: " + plot);
            }
        }
        out.flush();
        if (System.getenv("VIPER_DEBUG") != null) {
            err.println("viper: demo: process logs kept in " + work);
        } else {
            deleteQuietly(work);
        }
        return 0;
    }

    // ---------------------------------------------------------------- options

    Settings validate() {
        List<String> wanted = new ArrayList<>();
        for (String p : policies.split(",")) {
            String name = p.strip().toLowerCase(Locale.ROOT);
            if (name.isEmpty()) {
                continue;
            }
            if (!ALL_POLICIES.contains(name)) {
                throw new ViperConfigException("--policies: unknown policy '" + p.strip() + "' (known: " + String.join(", ", ALL_POLICIES) + ")");
            }
            if (wanted.contains(name)) {
                throw new ViperConfigException("--policies: '" + name + "' is given twice");
            }
            wanted.add(name);
        }
        if (wanted.isEmpty()) {
            throw new ViperConfigException("--policies: give at least one of " + String.join(", ", ALL_POLICIES));
        }
        if (iterations < 20 || iterations > 1_000_000) {
            throw new ViperConfigException("--iterations " + iterations + " is outside 20..1000000");
        }
        long s = warmup != null ? warmup : Math.max(10, iterations / 10);
        if (s < 10 || s >= iterations) {
            throw new ViperConfigException("--warmup " + s + " must be at least 10 (the curve is fitted on it) and less than --iterations " + iterations);
        }
        Duration p = Durations.parse(pace);
        long paceNanos = p.toNanos();
        if (paceNanos < 100_000 || paceNanos > 1_000_000_000) {
            throw new ViperConfigException("--pace " + pace + " is outside 100us..1s (e.g. 5ms)");
        }
        if (!(rate >= 1 && rate <= 20_000)) {
            throw new ViperConfigException("--rate " + rate + " is outside 1..20000 requests per second");
        }
        String t = transport == null ? (ucxAvailable().isEmpty() ? "ucx" : "tcp") : transport.strip().toLowerCase(Locale.ROOT);
        switch (t) {
            case "tcp", "file" -> { }
            case "ucx" -> {
                Optional<String> why = ucxAvailable();
                if (why.isPresent()) {
                    throw new ViperException(ViperException.Reason.UNAVAILABLE, "--transport ucx: " + why.get() + " (use --transport tcp)");
                }
            }
            default -> throw new ViperConfigException("--transport '" + transport + "': expected ucx, tcp or file");
        }
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
            throw new ViperConfigException("--notifier '" + n + "' is not a notifier address: " + e.getReason() + " (e.g. embedded://127.0.0.1:0, kafka://host:9092)");
        }
        if (plot != null) {
            String name = plot.getFileName() == null ? "" : plot.getFileName().toString().toLowerCase(Locale.ROOT);
            if (!name.endsWith(".png")) {
                throw new ViperConfigException("--plot " + plot + ": the file name must end in .png");
            }
            SchedulePlot.checkPath(plot);
        }
        Settings st = new Settings(List.copyOf(wanted), iterations, s, paceNanos, rate, t, n, seed);
        if (st.requests() < 1) {
            throw new ViperConfigException("--rate " + rate + " with --pace " + pace + " over " + (iterations - s)
                    + " iterations serves no request; raise --rate or --iterations");
        }
        if (st.runSeconds() * wanted.size() > 3600) {
            throw new ViperConfigException(String.format(Locale.ROOT, "the runs would take %.0f s (--iterations x --pace x policies); keep it under an hour",
                    st.runSeconds() * wanted.size()));
        }
        return st;
    }

    /** Empty when the ucx:// transport is installed and usable here, else why not. */
    static Optional<String> ucxAvailable() {
        for (TransportProvider p : ServiceLoader.load(TransportProvider.class, DemoCommand.class.getClassLoader())) {
            if (p.scheme().equals("ucx")) {
                return p.unavailableReason();
            }
        }
        return Optional.of("no ucx:// transport is installed");
    }

    private static boolean liveTerminal() {
        if (System.getenv("VIPER_STDERR_TTY") != null) {
            return true;
        }
        java.io.Console c = System.console();
        return c != null && c.isTerminal();
    }

    // ---------------------------------------------------------------- plan

    /** Trains the warm-up, fits the curve and computes every policy's schedule. */
    static Plan plan(Settings s) {
        Trainer trainer = Trainer.defaults(s.end(), s.seed());
        double[] xs = new double[(int) s.warmup()];
        double[] ys = new double[xs.length];
        for (int i = 0; i < xs.length; i++) {
            ys[i] = trainer.step();
            xs[i] = trainer.iteration();
        }
        FitResult fit = new CurveFitter().fit(xs, ys);
        long bytes = 4L * trainer.model().parameterCount();
        String costPath = switch (s.transport()) {
            case "ucx" -> "host";
            case "file" -> "pfs";
            default -> "tcp";
        };
        CostModel costs = CostModel.defaults();
        ScheduleInput in = new ScheduleInput(fit.curve(), s.warmup(), s.end(), s.requests(), s.paceNanos() / 1e9,
                costs.saveSeconds(costPath, bytes), costs.loadSeconds(costPath, bytes), 1.0 / s.rate());
        CheckpointPlanner planner = new CheckpointPlanner(in);
        int trainImages = trainer.stream().trainingIndices().length;
        long epochIters = Math.ceilDiv(trainImages, trainer.batchSize());
        double threshold = CheckpointPlanner.adaptiveThreshold(ys);
        Map<String, Schedule> schedules = new LinkedHashMap<>();
        CheckpointPlanner.Options options = new CheckpointPlanner.Options(MAX_CHECKPOINTS, threshold, epochIters);
        for (String p : s.policies()) {
            schedules.put(p, planner.schedule(CheckpointPlanner.Algorithm.parse(p), options));
        }
        return new Plan(fit, in, epochIters, trainImages, threshold, schedules, bytes, costPath);
    }

    // ---------------------------------------------------------------- one run

    private Outcome run(Settings s, Plan plan, String name, int index, Path work, Status status) throws Exception {
        long t0 = System.nanoTime();
        Schedule schedule = plan.schedules().get(name);
        Path dir = Files.createDirectories(work.resolve(name));
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        List<String> jvm = List.of(java, "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.util.logging.config.file=" + writeLogging(dir), "-cp", System.getProperty("java.class.path"));
        List<String> common = List.of("--iterations", Long.toString(s.end()), "--warmup", Long.toString(s.warmup()),
                "--seed", Long.toString(s.seed()), "--pace-us", Long.toString(Math.max(1, s.paceNanos() / 1000)));
        Optional<Path> pfs = s.transport().equals("file") ? Optional.of(Files.createDirectories(dir.resolve("pfs"))) : Optional.empty();

        List<String> pcmd = new ArrayList<>(jvm);
        pcmd.add(DemoProducer.class.getName());
        pcmd.addAll(common);
        pcmd.addAll(List.of("--checkpoints", schedule.count() == 0 ? "none" : joined(schedule.checkpoints()),
                "--notifier", s.notifier(), "--transports", switch (s.transport()) {
                    case "ucx" -> "ucx://127.0.0.1:0,tcp://127.0.0.1:0"; // tcp as the fallback; the path column says which served
                    case "tcp" -> "tcp://127.0.0.1:0";
                    default -> "none";
                }));
        pfs.ifPresent(p -> pcmd.addAll(List.of("--pfs", p.toString())));

        status.live(String.format(Locale.ROOT, "[%d/%d %s] starting the producer (warm-up %d iterations)...", index + 1,
                s.policies().size(), name, s.warmup()));
        try (Child producer = Child.start("producer", name, pcmd, dir.resolve("producer.log"))) {
            JsonNode ready = producer.awaitEvent("ready", Duration.ofSeconds(120));
            String notifierUri = ready.path("notifier").asText();
            List<String> ccmd = new ArrayList<>(jvm);
            ccmd.add(DemoConsumer.class.getName());
            ccmd.addAll(common);
            ccmd.addAll(List.of("--rate", Double.toString(s.rate()), "--notifier", notifierUri,
                    "--paths", s.transport().equals("ucx") ? "ucx,tcp" : s.transport()));
            pfs.ifPresent(p -> ccmd.addAll(List.of("--pfs", p.toString())));
            status.live(String.format(Locale.ROOT, "[%d/%d %s] starting the consumer...", index + 1, s.policies().size(), name));
            try (Child consumer = Child.start("consumer", name, ccmd, dir.resolve("consumer.log"))) {
                consumer.awaitEvent("ready", Duration.ofSeconds(120));
                long start = System.currentTimeMillis() + 300;
                producer.send("start " + start);
                consumer.send("start " + start);
                Duration limit = Duration.ofMillis((long) (s.runSeconds() * 1000) + 120_000);
                long deadline = System.nanoTime() + limit.toNanos();
                while (!(producer.result.isDone() && consumer.result.isDone())) {
                    producer.checkAlive();
                    consumer.checkAlive();
                    if (System.nanoTime() > deadline) {
                        throw new ViperException(ViperException.Reason.TIMEOUT, "demo: policy " + name + " did not finish within "
                                + limit.toSeconds() + " s (logs in " + dir + ")");
                    }
                    status.live(progress(s, name, index, producer.progress, consumer.progress));
                    Thread.sleep(200);
                }
                JsonNode pr = producer.result.get();
                JsonNode cr = consumer.result.get();
                producer.send("stop");
                producer.finish(Duration.ofSeconds(30));
                consumer.finish(Duration.ofSeconds(30));
                status.clear();
                return outcome(name, schedule, pr, cr, (System.nanoTime() - t0) / 1e9);
            }
        }
    }

    private static String progress(Settings s, String name, int index, JsonNode p, JsonNode c) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "[%d/%d %s]", index + 1, s.policies().size(), name));
        if (p == null && c == null) {
            sb.append(" both processes ready, starting the clock...");
        }
        if (p != null) {
            sb.append(String.format(Locale.ROOT, " iteration %d/%d, published v%d, train loss %.3f", p.path("iteration").asLong(), s.end(),
                    p.path("version").asLong(), p.path("loss").asDouble()));
        }
        if (c != null) {
            sb.append(String.format(Locale.ROOT, " | served %d/%d with v%d, loss %.3f", c.path("served").asLong(), c.path("of").asLong(),
                    c.path("version").asLong(), c.path("loss").asDouble()));
        }
        return sb.toString();
    }

    static Outcome outcome(String name, Schedule schedule, JsonNode pr, JsonNode cr, double seconds) {
        long[] published = longs(pr.path("iterations"));
        int requests = cr.path("requests").asInt();
        double[] losses = doubles(cr.path("losses"));
        List<Double> latencies = new ArrayList<>();
        LinkedHashSet<String> paths = new LinkedHashSet<>();
        for (JsonNode u : cr.path("updates")) {
            paths.add(u.path("path").asText());
            if (u.path("version").asLong() > 1) { // version 1 is the warm-up model, loaded before the clock starts
                latencies.add(u.path("latency_ms").asDouble());
            }
        }
        double mean = latencies.isEmpty() ? Double.NaN : latencies.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
        double p90 = latencies.isEmpty() ? Double.NaN : percentile(latencies, 0.9);
        return new Outcome(name, schedule, pr.path("checkpoints").asInt(), published, cr.path("cil").asDouble(), requests,
                requests == 0 ? Double.NaN : cr.path("correct").asDouble() / requests, latencies.size(), mean, p90,
                pr.path("stall_ms").asDouble(), String.join("+", paths), pr.path("max_late_ms").asDouble(), losses, seconds);
    }

    /** The nearest-rank percentile {@code q} of {@code values}. */
    static double percentile(List<Double> values, double q) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int rank = (int) Math.ceil(q * v.length);
        return v[Math.max(0, Math.min(v.length - 1, rank - 1))];
    }

    private static Path writeLogging(Path dir) throws IOException {
        Path f = dir.resolve("logging.properties");
        Files.writeString(f, String.join("\n",
                "handlers=java.util.logging.ConsoleHandler",
                ".level=WARNING",
                "io.viper.level=INFO",
                "smile.level=WARNING",
                "java.util.logging.ConsoleHandler.level=ALL",
                "java.util.logging.SimpleFormatter.format=%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n", ""));
        return f;
    }

    // ---------------------------------------------------------------- output

    private static void printTable(PrintWriter out, Settings s, Plan plan, List<Outcome> outcomes, double total) {
        ScheduleInput in = plan.input();
        out.println();
        out.printf(Locale.ROOT, "workload   digits MLP 64-32-10 (%d bytes), continual stream: digits arrive in 4 stages, images rotate up to 30 deg%n",
                plan.modelBytes());
        out.printf(Locale.ROOT, "run        iterations %d..%d at %s each (%.1f s), %d requests at %.0f/s per policy, seed %d%n",
                s.warmup() + 1, s.end(), fmtDuration(s.paceNanos()), s.runSeconds(), s.requests(), s.rate(), s.seed());
        out.printf(Locale.ROOT, "predictor  %s fitted on the %d warm-up losses (RMSE %.3g); costs: t_train %s, t_infer %s, t_s %s, t_load %s (%s cost model)%n",
                plan.fit().curve().describe(), s.warmup(), plan.fit().rmse(), secs(in.tTrain()), secs(in.tInfer()), secs(in.tSave()),
                secs(in.tLoad()), plan.costPath());
        out.printf(Locale.ROOT, "schedules  epoch = every %d iterations (one pass over the %s training images); fixed/adaptive/optimal at most %d checkpoints%n",
                plan.epochIters(), String.format(Locale.ROOT, "%,d", plan.trainImages()), MAX_CHECKPOINTS);
        out.println();
        out.printf(Locale.ROOT, "%-9s %11s %11s %13s %9s %14s %13s %9s  %s%n", "policy", "checkpoints", "CIL", "predicted CIL", "accuracy",
                "update ms mean", "update ms p90", "stall ms", "path");
        for (Outcome o : outcomes) {
            out.printf(Locale.ROOT, "%-9s %11d %11.2f %13.2f %8.1f%% %14s %13s %9.2f  %s%n", o.name(), o.checkpoints(), o.cil(),
                    o.schedule().cil(), 100 * o.accuracy(), ms(o.updateMsMean()), ms(o.updateMsP90()), o.stallMs(), o.path());
        }
        out.println();
        out.println(verdict(outcomes));
        out.printf(Locale.ROOT, "(%d requests per policy, the same ones in every run; CIL = sum of their cross-entropy losses, measured; "
                + "predicted CIL = the scheduler's simulation on the fitted curve; %.0f s in all)%n", s.requests(), total);
    }

    /** The line saying which policy won, and by how much against epoch. */
    static String verdict(List<Outcome> outcomes) {
        Outcome best = outcomes.getFirst();
        for (Outcome o : outcomes) {
            if (o.cil() < best.cil()) {
                best = o;
            }
        }
        Optional<Outcome> epoch = outcomes.stream().filter(o -> o.name().equals("epoch")).findFirst();
        if (epoch.isEmpty()) {
            return String.format(Locale.ROOT, "winner: %s with CIL %.2f (epoch was not run)", best.name(), best.cil());
        }
        Outcome e = epoch.get();
        if (best == e) {
            Optional<Outcome> viper = outcomes.stream().filter(o -> List.of("fixed", "adaptive", "optimal").contains(o.name()))
                    .min((a, b) -> Double.compare(a.cil(), b.cil()));
            return viper.map(v -> String.format(Locale.ROOT,
                            "winner: epoch with CIL %.2f; Viper's best schedule, %s, served %.1f%% more loss (%.2f): on this run Viper did not beat the baseline",
                            e.cil(), v.name(), 100 * (v.cil() / e.cil() - 1), v.cil()))
                    .orElse(String.format(Locale.ROOT, "winner: epoch with CIL %.2f", e.cil()));
        }
        return String.format(Locale.ROOT, "winner: %s with CIL %.2f, %.1f%% less loss than epoch (%.2f) with %d checkpoints instead of %d",
                best.name(), best.cil(), 100 * (1 - best.cil() / e.cil()), e.cil(), best.checkpoints(), e.checkpoints());
    }

    static String json(Settings s, Plan plan, List<Outcome> outcomes, double total) {
        ObjectMapper m = new ObjectMapper();
        ObjectNode root = m.createObjectNode();
        ArrayNode arr = root.putArray("policies");
        for (Outcome o : outcomes) {
            ObjectNode n = arr.addObject();
            n.put("name", o.name());
            n.put("checkpoints", o.checkpoints());
            n.put("cil", o.cil());
            n.put("accuracy", o.accuracy());
            putNumber(n, "update_ms_mean", o.updateMsMean());
            putNumber(n, "update_ms_p90", o.updateMsP90());
            n.put("stall_ms", o.stallMs());
            n.put("path", o.path());
            n.put("predicted_cil", o.schedule().cil());
            n.put("requests", o.requests());
            n.put("swaps", o.swaps());
            ArrayNode sched = n.putArray("schedule");
            for (long c : o.schedule().checkpoints()) {
                sched.add(c);
            }
            ArrayNode pub = n.putArray("published");
            for (long c : o.publishedIterations()) {
                pub.add(c);
            }
            n.put("max_late_ms", o.maxLateMs());
        }
        String v = verdict(outcomes);
        root.put("verdict", v);
        ObjectNode run = root.putObject("run");
        run.put("iterations", s.end());
        run.put("warmup", s.warmup());
        run.put("pace_ms", s.paceNanos() / 1e6);
        run.put("rate", s.rate());
        run.put("transport", s.transport());
        run.put("seed", s.seed());
        run.put("requests", s.requests());
        run.put("seconds", total);
        ObjectNode pred = root.putObject("predictor");
        pred.put("curve", plan.fit().curve().describe());
        pred.put("rmse", plan.fit().rmse());
        pred.put("t_train_s", plan.input().tTrain());
        pred.put("t_infer_s", plan.input().tInfer());
        pred.put("t_save_s", plan.input().tSave());
        pred.put("t_load_s", plan.input().tLoad());
        pred.put("epoch_iterations", plan.epochIters());
        pred.put("adaptive_threshold", plan.adaptiveThreshold());
        return root.toString();
    }

    private static void putNumber(ObjectNode n, String key, double v) {
        if (Double.isFinite(v)) {
            n.put(key, v);
        } else {
            n.putNull(key);
        }
    }

    private static String ms(double v) {
        return Double.isFinite(v) ? String.format(Locale.ROOT, "%.2f", v) : "-";
    }

    private static String secs(double v) {
        return v >= 1e-3 ? String.format(Locale.ROOT, "%.3g ms", v * 1e3) : String.format(Locale.ROOT, "%.3g us", v * 1e6);
    }

    private static String fmtDuration(long nanos) {
        return secs(nanos / 1e9);
    }

    private static String joined(long[] v) {
        StringBuilder sb = new StringBuilder();
        for (long x : v) {
            if (!sb.isEmpty()) {
                sb.append(',');
            }
            sb.append(x);
        }
        return sb.toString();
    }

    private static long[] longs(JsonNode a) {
        long[] out = new long[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asLong();
        }
        return out;
    }

    private static double[] doubles(JsonNode a) {
        double[] out = new double[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asDouble();
        }
        return out;
    }

    private static void deleteQuietly(Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory; the OS cleans it eventually
        }
    }

    // ---------------------------------------------------------------- helpers

    /** The status line on stderr: rewritten in place on a terminal, otherwise only the finished lines. */
    static final class Status {
        private final PrintWriter err;
        private final boolean live;
        private int shown;

        Status(PrintWriter err, boolean live) {
            this.err = err;
            this.live = live;
        }

        /** Replaces the live line (terminal only). */
        synchronized void live(String text) {
            if (!live) {
                return;
            }
            String t = text.length() > 150 ? text.substring(0, 150) : text;
            err.print("\r" + t + " ".repeat(Math.max(0, shown - t.length())));
            err.flush();
            shown = t.length();
        }

        /** Clears the live line. */
        synchronized void clear() {
            if (live && shown > 0) {
                err.print("\r" + " ".repeat(shown) + "\r");
                err.flush();
                shown = 0;
            }
        }

        /** Prints a permanent line. */
        synchronized void line(String text) {
            clear();
            err.println(text);
            err.flush();
        }
    }

    /** One child process: its stdout read as JSON lines on a thread, its stderr in a log file. */
    static final class Child implements AutoCloseable {
        private final String role;
        private final String policy;
        private final Process process;
        private final Writer stdin;
        private final Path log;
        private final Map<String, CompletableFuture<JsonNode>> events = new java.util.concurrent.ConcurrentHashMap<>();
        final CompletableFuture<JsonNode> result;
        volatile JsonNode progress;

        private Child(String role, String policy, Process process, Path log) {
            this.role = role;
            this.policy = policy;
            this.process = process;
            this.log = log;
            this.stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
            this.result = event("result");
            Thread.ofPlatform().daemon().name("demo-" + role).start(this::readLoop);
        }

        static Child start(String role, String policy, List<String> cmd, Path log) throws IOException {
            Process p = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
            LIVE.add(p);
            return new Child(role, policy, p, log);
        }

        /** Processes still running, ended by a shutdown hook if the demo is interrupted (Ctrl-C). */
        private static final java.util.Set<Process> LIVE = java.util.concurrent.ConcurrentHashMap.newKeySet();

        static {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroy), "demo-children"));
        }

        private CompletableFuture<JsonNode> event(String name) {
            return events.computeIfAbsent(name, k -> new CompletableFuture<>());
        }

        private void readLoop() {
            ObjectMapper m = new ObjectMapper();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (!line.startsWith("{")) {
                        continue;
                    }
                    JsonNode n = m.readTree(line);
                    String ev = n.path("event").asText();
                    if (ev.equals("progress")) {
                        progress = n;
                    } else {
                        event(ev).complete(n);
                    }
                }
            } catch (IOException e) {
                // the process ended; checkAlive reports it
            }
        }

        JsonNode awaitEvent(String name, Duration timeout) throws Exception {
            long deadline = System.nanoTime() + timeout.toNanos();
            CompletableFuture<JsonNode> f = event(name);
            while (true) {
                try {
                    return f.get(100, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    checkAlive();
                    if (System.nanoTime() > deadline) {
                        throw new ViperException(ViperException.Reason.TIMEOUT, "demo: the " + role + " of policy " + policy + " was not "
                                + name + " within " + timeout.toSeconds() + " s (log: " + log + ")");
                    }
                }
            }
        }

        void checkAlive() throws InterruptedException {
            if (!process.isAlive() && !result.isDone()) {
                process.waitFor(1, TimeUnit.SECONDS); // let the reader drain the last lines
                Thread.sleep(100);
                if (!result.isDone()) {
                    throw new ViperException(ViperException.Reason.INTERNAL, "demo: the " + role + " of policy " + policy + " exited with status "
                            + process.exitValue() + ": " + lastLine() + " (log: " + log + ")");
                }
            }
        }

        private String lastLine() {
            try {
                List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
                for (int i = lines.size() - 1; i >= 0; i--) {
                    String l = lines.get(i).strip();
                    if (l.startsWith("Demo") || l.startsWith("Exception") || l.contains("Exception:")) {
                        return l;
                    }
                }
                return lines.isEmpty() ? "no output" : lines.getLast().strip();
            } catch (IOException e) {
                return "no log";
            }
        }

        void send(String command) throws IOException {
            try {
                stdin.write(command + "\n");
                stdin.flush();
            } catch (IOException e) {
                if (process.isAlive()) {
                    throw e;
                }
            }
        }

        void finish(Duration timeout) throws InterruptedException, IOException {
            try {
                stdin.close();
            } catch (IOException e) {
                // already gone
            }
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroy();
            }
        }

        @Override
        public void close() {
            LIVE.remove(process);
            if (process.isAlive()) {
                process.destroy();
                try {
                    if (!process.waitFor(5, TimeUnit.SECONDS)) {
                        process.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    process.destroyForcibly();
                }
            }
        }
    }
}
