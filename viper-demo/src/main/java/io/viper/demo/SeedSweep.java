package io.viper.demo;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * {@code viper demo --seeds N}: the demo's policies on N seeds ({@code seed, seed + 1, ...}), each replayed in this
 * process ({@link Replay}), and per policy the mean, median, worst and spread over the seeds of its CIL relative to
 * {@code hindsight}'s, how often it served less than {@code fixed} and {@code epoch}, how many checkpoints it took at
 * least, and for {@code optimal} the worst excess over {@code epoch} in units of the replicas' spread.
 *
 * <p>One thread runs a sweep.
 */
public final class SeedSweep {
    private SeedSweep() {}

    /** Every seed's replay, in order. */
    public static List<Replay.Result> run(
            DemoSettings s, int seeds, double tSave, double latency, Consumer<Replay.Result> progress) {
        List<Replay.Result> out = new ArrayList<>();
        for (int i = 0; i < seeds; i++) {
            Replay.Result r = Replay.run(withSeed(s, s.seed() + i), tSave, latency);
            progress.accept(r);
            out.add(r);
        }
        return out;
    }

    /** One line per seed: each policy's CIL and, after it, its excess over hindsight's in percent. */
    public static String seedLine(long seed, Replay.Result r) {
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT, "seed %-6d", seed));
        Replay.Run h = r.of(DemoPolicy.HINDSIGHT);
        for (Replay.Run run : r.runs()) {
            sb.append(String.format(Locale.ROOT, "  %s %.1f", run.policy().displayName(), run.cil()));
            if (h != null && run != h) {
                sb.append(String.format(Locale.ROOT, " (%+.1f%%)", 100 * (run.cil() / h.cil() - 1)));
            }
            if (run.policy() != DemoPolicy.NONE && run.policy() != DemoPolicy.HINDSIGHT) {
                sb.append(String.format(Locale.ROOT, " [%d]", run.checkpoints().length));
            }
        }
        return sb.toString();
    }

    /** Each policy's checkpoints and what the plan said of it, one line each, for a closer look at one seed. */
    public static String details(Replay.Result r) {
        StringBuilder sb = new StringBuilder();
        for (Replay.Run run : r.runs()) {
            sb.append(String.format(
                    Locale.ROOT,
                    "  %-9s %s%s%n",
                    run.policy().displayName(),
                    run.detail().isEmpty() ? "" : run.detail() + ": ",
                    Arrays.toString(run.checkpoints())));
        }
        return sb.toString();
    }

    /** The summary table over every seed of {@code results}. */
    public static void table(PrintWriter out, DemoSettings s, List<Replay.Result> results, double latency) {
        out.printf(
                Locale.ROOT,
                "%d seeds from %d, workload %s, %d requests x %d replicas per run, update latency %.2f ms"
                        + " (replayed in process: same plan, policies, training and requests as the demo)%n",
                results.size(),
                s.seed(),
                s.workload().displayName(),
                s.requests(),
                s.replicas(),
                latency * 1e3);
        out.printf(
                Locale.ROOT,
                "%-10s %9s %9s %9s %9s %9s %10s %10s %8s%n",
                "policy",
                "mean",
                "median",
                "worst",
                "best",
                "sd",
                "<fixed",
                "<epoch",
                "min ckpt");
        for (DemoPolicy p : s.policies()) {
            if (p == DemoPolicy.HINDSIGHT || results.getFirst().of(DemoPolicy.HINDSIGHT) == null) {
                continue;
            }
            double[] rel = new double[results.size()];
            int belowFixed = 0;
            int belowEpoch = 0;
            int minCheckpoints = Integer.MAX_VALUE;
            for (int i = 0; i < rel.length; i++) {
                Replay.Result r = results.get(i);
                Replay.Run run = r.of(p);
                rel[i] = 100 * (run.cil() / r.of(DemoPolicy.HINDSIGHT).cil() - 1);
                belowFixed += below(run, r.of(DemoPolicy.FIXED));
                belowEpoch += below(run, r.of(DemoPolicy.EPOCH));
                minCheckpoints = Math.min(minCheckpoints, run.checkpoints().length);
            }
            out.printf(
                    Locale.ROOT,
                    "%-10s %+8.2f%% %+8.2f%% %+8.2f%% %+8.2f%% %8.2f%% %10s %10s %8d%n",
                    p.displayName(),
                    mean(rel),
                    median(rel),
                    max(rel),
                    -max(negate(rel)),
                    sd(rel),
                    count(belowFixed, results.size(), p, DemoPolicy.FIXED),
                    count(belowEpoch, results.size(), p, DemoPolicy.EPOCH),
                    minCheckpoints);
        }
        if (results.getFirst().of(DemoPolicy.OPTIMAL) != null
                && results.getFirst().of(DemoPolicy.EPOCH) != null) {
            double worst = Double.NEGATIVE_INFINITY;
            long worstSeed = 0;
            for (int i = 0; i < results.size(); i++) {
                Replay.Run o = results.get(i).of(DemoPolicy.OPTIMAL);
                Replay.Run e = results.get(i).of(DemoPolicy.EPOCH);
                double x = (o.cil() - e.cil()) / Math.max(1e-12, e.spread());
                if (x > worst) {
                    worst = x;
                    worstSeed = s.seed() + i;
                }
            }
            out.printf(
                    Locale.ROOT,
                    "optimal - epoch, worst seed: %+.2f replica sd (seed %d; within the spread when <= 1)%n",
                    worst,
                    worstSeed);
        }
        out.println("(CIL relative to hindsight's on the same seed, in percent; <fixed, <epoch: seeds on which the"
                + " policy served less loss; min ckpt: the fewest checkpoints it took on a seed)");
    }

    private static String count(int n, int of, DemoPolicy p, DemoPolicy other) {
        return p == other ? "-" : n + "/" + of;
    }

    private static int below(Replay.Run run, Replay.Run other) {
        return other != null && run.cil() < other.cil() ? 1 : 0;
    }

    static DemoSettings withSeed(DemoSettings s, long seed) {
        return new DemoSettings(
                s.policies(),
                s.end(),
                s.warmup(),
                s.paceNanos(),
                s.rate(),
                s.transport(),
                s.notifier(),
                seed,
                s.workload(),
                s.budget(),
                s.objective(),
                s.replicas());
    }

    static double mean(double[] x) {
        return Arrays.stream(x).average().orElse(Double.NaN);
    }

    static double median(double[] x) {
        double[] c = x.clone();
        Arrays.sort(c);
        int n = c.length;
        return n % 2 == 1 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    }

    static double sd(double[] x) {
        if (x.length < 2) {
            return 0;
        }
        double m = mean(x);
        return Math.sqrt(Arrays.stream(x).map(v -> (v - m) * (v - m)).sum() / (x.length - 1));
    }

    private static double max(double[] x) {
        return Arrays.stream(x).max().orElse(Double.NaN);
    }

    private static double[] negate(double[] x) {
        return Arrays.stream(x).map(v -> -v).toArray();
    }
}
