package io.viper.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import io.viper.scheduler.ScheduleInput;
import java.io.PrintWriter;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * What {@code viper demo} prints about a {@link DemoResult}: the table with the verdict line, or one
 * JSON object ({@code --json}). Stateless.
 */
public final class DemoReport {
    private DemoReport() {
    }

    /** The table: the workload, run, predictor and schedules lines, one row per policy, the verdict. */
    public static void table(PrintWriter out, DemoResult r) {
        DemoSettings s = r.settings();
        DemoPlan plan = r.plan();
        ScheduleInput in = plan.input();
        out.println();
        out.printf(Locale.ROOT, "workload   digits MLP 64-32-10 (%d bytes), continual stream: digits arrive in 4 stages, images rotate up to 30 deg%n",
                plan.modelBytes());
        out.printf(Locale.ROOT, "run        iterations %d..%d at %s each (%.1f s), %d requests at %.0f/s per policy, seed %d%n",
                s.warmup() + 1, s.end(), duration(s.paceNanos()), s.runSeconds(), s.requests(), s.rate(), s.seed());
        out.printf(Locale.ROOT, "predictor  %s fitted on the %d warm-up losses (RMSE %.3g); costs: t_train %s, t_infer %s, t_s %s, t_load %s (%s cost model)%n",
                plan.fit().curve().describe(), s.warmup(), plan.fit().rmse(), secs(in.tTrain()), secs(in.tInfer()), secs(in.tSave()),
                secs(in.tLoad()), s.transport().costPath());
        out.printf(Locale.ROOT, "schedules  epoch = every %d iterations (one pass over the %s training images); fixed/adaptive/optimal at most %d checkpoints%n",
                plan.epochIters(), String.format(Locale.ROOT, "%,d", plan.trainImages()), DemoPlan.MAX_CHECKPOINTS);
        out.println();
        out.printf(Locale.ROOT, "%-9s %11s %11s %13s %9s %14s %13s %9s  %s%n", "policy", "checkpoints", "CIL", "predicted CIL", "accuracy",
                "update ms mean", "update ms p90", "stall ms", "path");
        for (PolicyOutcome o : r.outcomes()) {
            out.printf(Locale.ROOT, "%-9s %11d %11.2f %13.2f %8.1f%% %14s %13s %9.2f  %s%n", o.name(), o.checkpoints(), o.cil(),
                    o.schedule().cil(), 100 * o.accuracy(), ms(o.updateMsMean()), ms(o.updateMsP90()), o.stallMs(), o.path());
        }
        out.println();
        out.println(verdict(r.outcomes()));
        out.printf(Locale.ROOT, "(%d requests per policy, the same ones in every run; CIL = sum of their cross-entropy losses, measured; "
                + "predicted CIL = the scheduler's simulation on the fitted curve; %.0f s in all)%n", s.requests(), r.seconds());
    }

    /** The line saying which policy won, and by how much against {@code epoch}. */
    public static String verdict(List<PolicyOutcome> outcomes) {
        PolicyOutcome best = outcomes.getFirst();
        for (PolicyOutcome o : outcomes) {
            if (o.cil() < best.cil()) {
                best = o;
            }
        }
        Optional<PolicyOutcome> epoch = outcomes.stream().filter(o -> o.policy() == Algorithm.EPOCH).findFirst();
        if (epoch.isEmpty()) {
            return String.format(Locale.ROOT, "winner: %s with CIL %.2f (epoch was not run)", best.name(), best.cil());
        }
        PolicyOutcome e = epoch.get();
        if (best == e) {
            // Viper's schedules: those that place checkpoints, other than the baseline
            Optional<PolicyOutcome> viper = outcomes.stream().filter(o -> o.policy() != Algorithm.EPOCH && o.policy() != Algorithm.NONE)
                    .min(Comparator.comparingDouble(PolicyOutcome::cil));
            return viper.map(v -> String.format(Locale.ROOT,
                            "winner: epoch with CIL %.2f; Viper's best schedule, %s, served %.1f%% more loss (%.2f): on this run Viper did not beat the baseline",
                            e.cil(), v.name(), 100 * (v.cil() / e.cil() - 1), v.cil()))
                    .orElse(String.format(Locale.ROOT, "winner: epoch with CIL %.2f", e.cil()));
        }
        return String.format(Locale.ROOT, "winner: %s with CIL %.2f, %.1f%% less loss than epoch (%.2f) with %d checkpoints instead of %d",
                best.name(), best.cil(), 100 * (1 - best.cil() / e.cil()), e.cil(), best.checkpoints(), e.checkpoints());
    }

    /** The {@code --json} object: {@code policies} (one object each), {@code verdict}, {@code run}, {@code predictor}. */
    public static String json(DemoResult r) {
        DemoSettings s = r.settings();
        DemoPlan plan = r.plan();
        ObjectNode root = new ObjectMapper().createObjectNode();
        ArrayNode arr = root.putArray("policies");
        for (PolicyOutcome o : r.outcomes()) {
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
        root.put("verdict", verdict(r.outcomes()));
        ObjectNode run = root.putObject("run");
        run.put("iterations", s.end());
        run.put("warmup", s.warmup());
        run.put("pace_ms", s.paceNanos() / 1e6);
        run.put("rate", s.rate());
        run.put("transport", s.transport().displayName());
        run.put("seed", s.seed());
        run.put("requests", s.requests());
        run.put("seconds", r.seconds());
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

    /** Seconds as {@code 5 ms} or {@code 500 us}, three significant digits. */
    static String secs(double v) {
        return v >= 1e-3 ? String.format(Locale.ROOT, "%.3g ms", v * 1e3) : String.format(Locale.ROOT, "%.3g us", v * 1e6);
    }

    /** A duration in nanoseconds, as {@link #secs}. */
    static String duration(long nanos) {
        return secs(nanos / 1e9);
    }
}
