package io.viper.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.scheduler.ScheduleInput;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * What {@code viper demo} prints about a {@link DemoResult}: the table with the verdict line, or one JSON object
 * ({@code --json}). Every CIL is the mean over the request replicas with its spread (the replicas' standard deviation);
 * comparisons between policies are paired by replica, and a difference smaller than twice its standard error is called
 * noise. Stateless.
 */
public final class DemoReport {
    private DemoReport() {}

    /** The table: the workload, run, predictor and budget lines, one row per policy, the verdict. */
    public static void table(PrintWriter out, DemoResult r) {
        DemoSettings s = r.settings();
        DemoPlan plan = r.plan();
        ScheduleInput in = plan.input();
        out.println();
        out.printf(
                Locale.ROOT,
                "workload   %s: digits MLP 64-32-10 (%d bytes), %s%n",
                s.workload().displayName(),
                plan.modelBytes(),
                s.workload().description());
        out.printf(
                Locale.ROOT,
                "run        iterations %d..%d at %s each (%.1f s), %d requests at %.0f/s per policy, each asked of %d"
                        + " replicas, seed %d%n",
                s.warmup() + 1,
                s.end(),
                duration(s.paceNanos()),
                s.runSeconds(),
                s.requests(),
                s.rate(),
                s.replicas(),
                s.seed());
        out.printf(
                Locale.ROOT,
                "predictor  %s fitted on the %d warm-up %s (RMSE %.3g), %s (%s objective); t_train %s, t_infer %s,"
                        + " t_s %s (%s cost model), "
                        + "t_load %s (%s)%n",
                plan.fit().curve().describe(),
                s.warmup(),
                s.curveOnHeldOutLosses() ? "held-out losses" : "batch losses",
                plan.fit().rmse(),
                in.staleness().describe(),
                s.objective().displayName(),
                secs(in.tTrain()),
                secs(in.tInfer()),
                secs(in.tSave()),
                s.transport().path().costLine(),
                secs(in.tLoad()),
                plan.latencyMeasured()
                        ? "p90 of the update latency the runs measured"
                        : "cost model, no run had measured one");
        out.printf(
                Locale.ROOT,
                "budget     %d checkpoints for every policy (%s); epoch = every %d iterations (one pass over the %,d"
                        + " training images)%n",
                plan.budget(),
                s.budget().isPresent() ? "--budget" : "as many as epoch takes",
                plan.epochIters(),
                plan.trainImages());
        out.println();
        Optional<PolicyOutcome> hindsight = find(r.outcomes(), DemoPolicy.HINDSIGHT);
        out.printf(
                Locale.ROOT,
                "%-9s %11s %18s %22s %13s %9s %10s %9s  %s%n",
                "policy",
                "checkpoints",
                "CIL (mean +- sd)",
                "vs hindsight",
                "predicted CIL",
                "accuracy",
                "update ms",
                "stall ms",
                "path");
        for (PolicyOutcome o : r.outcomes()) {
            out.printf(
                    Locale.ROOT,
                    "%-9s %11d %18s %22s %13.2f %8.1f%% %10s %9.2f  %s%n",
                    o.name(),
                    o.checkpoints(),
                    String.format(Locale.ROOT, "%.2f +- %.2f", o.cil(), o.cilSpread()),
                    hindsight.map(h -> o == h ? "-" : relative(o, h)).orElse("-"),
                    o.predictedCil(),
                    100 * o.accuracy(),
                    ms(o.updateMsMean()),
                    o.stallMs(),
                    o.path());
        }
        out.println();
        out.println(verdict(r.outcomes()));
        DemoNotes.of(r.outcomes()).forEach(out::println);
        out.printf(
                Locale.ROOT,
                "(%d requests per policy and replica, the same ones in every run; CIL = sum of their cross-entropy"
                        + " losses, measured; "
                        + "vs hindsight = paired by replica, mean +- sd; predicted CIL = the scheduler's simulation,"
                        + " for online what its probes "
                        + "predicted, for hindsight its CIL on the replicas it was chosen on; %.0f s in all)%n",
                s.requests(),
                r.seconds());
    }

    /**
     * The line naming the policy with the lowest mean CIL (hindsight aside) and what it saved against {@code epoch} and
     * {@code fixed}, each paired by replica; a difference within noise is said to be.
     */
    public static String verdict(List<PolicyOutcome> outcomes) {
        PolicyOutcome best = null;
        for (PolicyOutcome o : outcomes) {
            if (o.policy() != DemoPolicy.HINDSIGHT && (best == null || o.cil() < best.cil())) {
                best = o;
            }
        }
        if (best == null) {
            return "winner: none (only hindsight was run)";
        }
        StringBuilder sb =
                new StringBuilder(String.format(Locale.ROOT, "winner: %s with CIL %.2f", best.name(), best.cil()));
        List<String> against = new ArrayList<>();
        for (DemoPolicy p : List.of(DemoPolicy.EPOCH, DemoPolicy.FIXED)) {
            Optional<PolicyOutcome> other = find(outcomes, p);
            if (other.isPresent() && other.get() != best) {
                double[] d = best.relativeTo(other.get());
                against.add(String.format(
                        Locale.ROOT,
                        "%.1f%% less loss than %s (%.2f)%s",
                        -100 * d[0],
                        p.displayName(),
                        other.get().cil(),
                        noise(d, best.cils().length) ? ", within request noise" : ""));
            }
        }
        if (!against.isEmpty()) {
            sb.append(", ").append(String.join(", ", against));
        }
        find(outcomes, DemoPolicy.HINDSIGHT).ifPresent(h -> {
            double[] d = h.relativeTo(outcomes.stream()
                    .filter(o -> o.policy() != DemoPolicy.HINDSIGHT)
                    .min(Comparator.comparingDouble(PolicyOutcome::cil))
                    .orElseThrow());
            sb.append(String.format(Locale.ROOT, "; hindsight %.2f (%+.1f%%)", h.cil(), 100 * d[0]));
        });
        return sb.toString();
    }

    /**
     * The {@code --json} object: {@code policies} (one object each), {@code verdict}, {@code run}, {@code predictor}.
     */
    public static String json(DemoResult r) {
        DemoSettings s = r.settings();
        DemoPlan plan = r.plan();
        ObjectNode root = new ObjectMapper().createObjectNode();
        ArrayNode arr = root.putArray("policies");
        Optional<PolicyOutcome> hindsight = find(r.outcomes(), DemoPolicy.HINDSIGHT);
        for (PolicyOutcome o : r.outcomes()) {
            ObjectNode n = arr.addObject();
            n.put("name", o.name());
            n.put("checkpoints", o.checkpoints());
            n.put("cil", o.cil());
            n.put("cil_sd", o.cilSpread());
            doubles(n.putArray("cils"), o.cils());
            if (hindsight.isPresent() && hindsight.get() != o) {
                double[] d = o.relativeTo(hindsight.get());
                n.putObject("vs_hindsight").put("mean", d[0]).put("sd", d[1]);
            }
            putNumber(n, "predicted_cil", o.predictedCil());
            n.put("accuracy", o.accuracy());
            putNumber(n, "update_ms_mean", o.updateMsMean());
            putNumber(n, "update_ms_p90", o.updateMsP90());
            n.put("stall_ms", o.stallMs());
            n.put("path", o.path());
            n.put("t_load_s", o.tLoadSeconds());
            n.put("requests", o.requests());
            n.put("swaps", o.swaps());
            longs(n.putArray("schedule"), o.schedule().checkpoints());
            longs(n.putArray("published"), o.publishedIterations());
            longs(n.putArray("changes"), o.changes());
            n.put("max_late_ms", o.maxLateMs());
        }
        root.put("verdict", verdict(r.outcomes()));
        ObjectNode run = root.putObject("run");
        run.put("workload", s.workload().displayName());
        run.put("iterations", s.end());
        run.put("warmup", s.warmup());
        run.put("pace_ms", s.paceNanos() / 1e6);
        run.put("rate", s.rate());
        run.put("replicas", s.replicas());
        run.put("budget", plan.budget());
        run.put("objective", s.objective().displayName());
        run.put("transport", s.transport().displayName());
        run.put("seed", s.seed());
        run.put("requests", s.requests());
        run.put("seconds", r.seconds());
        ObjectNode pred = root.putObject("predictor");
        pred.put("curve", plan.fit().curve().describe());
        pred.put("curve_losses", s.curveOnHeldOutLosses() ? "held-out" : "batch");
        pred.put("rmse", plan.fit().rmse());
        pred.put("drift_per_iteration", plan.input().staleness().ratePerIteration());
        pred.put("t_train_s", plan.input().tTrain());
        pred.put("t_infer_s", plan.input().tInfer());
        pred.put("t_save_s", plan.input().tSave());
        pred.put("t_load_s", plan.input().tLoad());
        pred.put("t_load_measured", plan.latencyMeasured());
        pred.put("epoch_iterations", plan.epochIters());
        pred.put("adaptive_threshold", plan.adaptiveThreshold());
        pred.put("online_threshold", plan.online().initialThreshold());
        pred.put("online_min_spacing", plan.online().minSpacing());
        return root.toString();
    }

    /** {@code +3.2% +- 0.4}, with {@code (noise)} when within request noise. */
    static String relative(PolicyOutcome o, PolicyOutcome base) {
        double[] d = o.relativeTo(base);
        return String.format(
                Locale.ROOT, "%+.1f%% +- %.1f%s", 100 * d[0], 100 * d[1], noise(d, o.cils().length) ? " (noise)" : "");
    }

    /** Whether a paired mean difference is within two standard errors of 0. */
    static boolean noise(double[] meanSd, int replicas) {
        return replicas < 2 || Math.abs(meanSd[0]) < 2 * meanSd[1] / Math.sqrt(replicas);
    }

    private static Optional<PolicyOutcome> find(List<PolicyOutcome> outcomes, DemoPolicy p) {
        return outcomes.stream().filter(o -> o.policy() == p).findFirst();
    }

    private static void longs(ArrayNode a, long[] values) {
        for (long v : values) {
            a.add(v);
        }
    }

    private static void doubles(ArrayNode a, double[] values) {
        for (double v : values) {
            a.add(v);
        }
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

    /** Seconds as {@code 5 ms} or {@code 500 us}, three significant digits. */
    static String secs(double v) {
        return v >= 1e-3
                ? String.format(Locale.ROOT, "%.3g ms", v * 1e3)
                : String.format(Locale.ROOT, "%.3g us", v * 1e6);
    }

    /** A duration in nanoseconds, as {@link #secs}. */
    static String duration(long nanos) {
        return secs(nanos / 1e9);
    }
}
