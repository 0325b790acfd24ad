package io.viper.cli;

import com.sun.management.OperatingSystemMXBean;
import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.CurveFitter;
import io.viper.predictor.FitResult;
import io.viper.predictor.LossCurve;
import io.viper.predictor.StalenessModel;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import io.viper.scheduler.Objective;
import io.viper.scheduler.PlanWarnings;
import io.viper.scheduler.Schedule;
import io.viper.scheduler.ScheduleInput;
import io.viper.scheduler.WarmupPlan;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.Function;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code viper schedule}: fits the warm-up losses of a loss log (or takes {@code --curve}), then prints the checkpoint
 * schedule of the chosen algorithm with its predicted cumulative inference loss and training overhead, next to those of
 * the other algorithms (the online policy's among them: what it would publish on the predicted losses); as JSON with
 * {@code --json}, and as a chart with {@code --plot}. Under the staleness-aware objective (the default) the drift comes
 * from {@code --drift}, else from the log's deployed-version columns, else it is 0 and the objective is Viper's.
 */
@Command(
        name = "schedule",
        mixinStandardHelpOptions = true,
        description = "Predicts the training-loss curve from the warm-up losses and picks checkpoint iterations that "
                + "minimise the cumulative inference loss (CIL); compares the schedules of every algorithm"
                + " that places checkpoints.")
public final class ScheduleCommand implements Callable<Integer> {
    /** Smile logs every Levenberg-Marquardt iteration at INFO; kept here so the level sticks. */
    private static final Logger SMILE_LOG = Logger.getLogger("smile");

    @Spec
    CommandSpec spec;

    @Option(
            names = "--loss-log",
            paramLabel = "FILE.csv",
            description = "CSV of iteration,loss (header optional); required unless --curve is given. "
                    + "For the staleness objective, held-out losses (what a request sees) predict better than"
                    + " training-batch losses.")
    Path lossLog;

    @Option(
            names = "--warmup",
            required = true,
            paramLabel = "S",
            description = "Warm-up end s: the consumer starts with the model of iteration s.")
    long warmup;

    @Option(names = "--end", required = true, paramLabel = "E", description = "Last training iteration e.")
    long end;

    @Option(
            names = "--inferences",
            required = true,
            paramLabel = "N",
            description = "Total inference requests of the run: the request rate times the run's length after the"
                    + " warm-up (a consumer's requests counter, or your serving logs).")
    double inferences;

    @Option(names = "--t-train", required = true, paramLabel = "S", description = "Seconds per training iteration.")
    double tTrain;

    @Option(
            names = "--t-save",
            required = true,
            paramLabel = "S",
            description = "Seconds the training loop stalls per checkpoint: the stall a publish costs the producer"
                    + " (/metrics: viper_producer_stall_seconds, its mean; viper bench transfer: the 'stall ms'"
                    + " column; viper publish --json: stall_ms).")
    double tSave;

    @Option(
            names = "--t-load",
            required = true,
            paramLabel = "S",
            description = "Seconds from a publish until consumers serve the new version: the update latency"
                    + " (/metrics: viper_update_latency_seconds, its mean or p90; viper bench transfer: the latency"
                    + " column; viper consume --json: latency_ms of each update).")
    double tLoad;

    @Option(
            names = "--t-infer",
            required = true,
            paramLabel = "S",
            description = "Seconds between two inference requests"
                    + " (1 / the request rate), so that t_train / t_infer requests are served per training iteration.")
    double tInfer;

    @Option(
            names = "--algorithm",
            defaultValue = "optimal",
            paramLabel = "NAME",
            completionCandidates = AlgorithmNames.class,
            description = "One of ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE}).")
    String algorithm;

    @Option(
            names = "--epoch-iters",
            paramLabel = "K",
            description = "Iterations per epoch for the epoch schedule (default: (e - s) / 10).")
    Long epochIters;

    @Option(
            names = "--max-checkpoints",
            defaultValue = "200",
            paramLabel = "K",
            description = "At most K checkpoints for fixed, adaptive and optimal, the budget of online (default:"
                    + " ${DEFAULT-VALUE}).")
    int maxCheckpoints;

    @Option(
            names = "--objective",
            defaultValue = "staleness",
            paramLabel = "NAME",
            description = "staleness (a version's loss grows with its age) or viper (a version serves with its training"
                    + " loss) (default: ${DEFAULT-VALUE}).")
    String objective;

    @Option(
            names = "--drift",
            paramLabel = "RATE",
            description =
                    "Loss a serving version gains per iteration of age, for the staleness objective (default: fitted"
                            + " on the loss log's "
                            + "deployed_iteration,deployed_loss columns, else 0).")
    Double drift;

    @Option(
            names = "--curve",
            paramLabel = "NAME:p1,p2,...",
            description = "Skip fitting and use this curve, e.g. exp3:2,0.001,0.3 (exp2, exp3, lin2, expd3, pow3).")
    String curveSpec;

    @Option(
            names = "--plot",
            paramLabel = "FILE.png|.svg",
            description = "Write a chart of the losses, the curve and the checkpoints.")
    Path plot;

    @Option(names = "--json", description = "Print JSON instead of text.")
    boolean json;

    /** The names {@code --algorithm} takes, from the planner's own list. */
    static final class AlgorithmNames implements Iterable<String> {
        @Override
        public Iterator<String> iterator() {
            return Arrays.stream(Algorithm.values()).map(Algorithm::displayName).iterator();
        }
    }

    @Override
    public Integer call() {
        SMILE_LOG.setLevel(Level.WARNING);
        Algorithm algo = Algorithm.parse(algorithm);
        Objective obj = Objective.parse(objective);
        if (drift != null && (obj == Objective.VIPER || !(drift >= 0) || !Double.isFinite(drift))) {
            throw new ViperConfigException(
                    obj == Objective.VIPER
                            ? "--drift goes with --objective staleness"
                            : "--drift must be a non-negative number, got " + drift);
        }
        if (maxCheckpoints < 1) {
            throw new ViperConfigException("--max-checkpoints must be at least 1, got " + maxCheckpoints);
        }
        if (epochIters != null && epochIters <= 0) {
            throw new ViperConfigException("--epoch-iters must be positive, got " + epochIters);
        }
        if (lossLog == null && curveSpec == null) {
            throw new ViperConfigException("give --loss-log FILE.csv, or --curve NAME:p1,p2,... to skip fitting");
        }
        if (plot != null) {
            SchedulePlot.checkPath(plot);
        }
        // the numbers before reading or fitting anything, each named by its flag
        ScheduleInput.checkNumbers(warmup, end, inferences, tTrain, tSave, tLoad, tInfer, "", n -> "--" + n);
        if (algo == Algorithm.ADAPTIVE && (warmup < 2 || warmup > ScheduleInput.MAX_SPAN)) {
            throw new ViperConfigException("--warmup must be 2.." + ScheduleInput.MAX_SPAN
                    + " for --algorithm adaptive (its threshold comes from "
                    + "the curve's drops over iterations 1..S), got " + warmup);
        }
        LossCurve fixedCurve = curveSpec == null ? null : CurveFamily.parseSpec(curveSpec);

        long t0 = System.nanoTime();
        LossLog log = lossLog == null ? null : LossLog.read(lossLog);
        long t1 = System.nanoTime();
        int warm = log == null ? 0 : log.countUpTo(warmup);
        if (fixedCurve == null && warm < 5) {
            throw new ViperConfigException("loss log " + lossLog + " has " + warm + " losses at iterations <= " + warmup
                    + " (the warm-up); need at least 5 to fit a curve");
        }
        WarmupPlan.Run run = new WarmupPlan.Run(warmup, end, inferences, tTrain, tSave, tLoad, tInfer);
        Function<LossCurve, StalenessModel> driftOf = c -> obj == Objective.VIPER
                ? StalenessModel.NONE
                : drift != null ? new StalenessModel(drift) : log != null ? log.drift(c, warmup) : StalenessModel.NONE;
        WarmupPlan plan = fixedCurve == null
                ? WarmupPlan.fit(Arrays.copyOf(log.iterations(), warm), Arrays.copyOf(log.losses(), warm), run, driftOf)
                : WarmupPlan.of(fixedCurve, run, driftOf);
        FitResult fit = plan.fit().orElse(null);
        LossCurve curve = plan.curve();
        ScheduleInput in = plan.input();
        StalenessModel staleness = in.staleness();
        Double rmse = fit != null
                ? Double.valueOf(fit.rmse())
                : warm > 0
                        ? Double.valueOf(CurveFitter.rmse(
                                curve, Arrays.copyOf(log.iterations(), warm), Arrays.copyOf(log.losses(), warm)))
                        : null;
        long epoch = epochIters != null ? epochIters : Math.max(1, (end - warmup) / 10);
        // every algorithm that places checkpoints; the no-checkpoint baseline only when it is the one asked for
        Set<Algorithm> compared = EnumSet.allOf(Algorithm.class);
        if (algo != Algorithm.NONE) {
            compared.remove(Algorithm.NONE);
        }
        long t3 = System.nanoTime();
        // one the user did not ask for that cannot run here is left out of the comparison, which says why
        WarmupPlan.Schedules schedules = plan.schedules(compared, Set.of(algo), maxCheckpoints, epoch);
        Map<Algorithm, Schedule> all = schedules.planned();
        Map<Algorithm, String> skipped = schedules.skipped();
        long t4 = System.nanoTime();
        Schedule chosen = all.get(algo);
        if (System.getenv("VIPER_DEBUG") != null) {
            spec.commandLine()
                    .getErr()
                    .printf(
                            Locale.ROOT,
                            "viper: timing (ms): jvm up to command %d, read %.0f, fit and curve %.0f, schedules %.0f%n",
                            ManagementFactory.getRuntimeMXBean().getUptime() - (System.nanoTime() - t0) / 1_000_000,
                            (t1 - t0) / 1e6,
                            (t3 - t1) / 1e6,
                            (t4 - t3) / 1e6);
            spec.commandLine()
                    .getErr()
                    .printf(
                            Locale.ROOT,
                            "viper: CPU (ms): main thread %d, whole process %d%n",
                            ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime() / 1_000_000,
                            ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime()
                                    / 1_000_000);
        }

        List<String> warnings =
                PlanWarnings.of(in, fixedCurve == null ? warm : 0, rmse == null ? Double.NaN : rmse, all);
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(ScheduleJson.json(curve, rmse, algo, chosen, all, skipped, in, warnings));
        } else {
            String from = drift != null ? "given with --drift" : "fitted on the loss log's deployed-version columns";
            printText(
                    out,
                    curve,
                    fit,
                    rmse,
                    warm,
                    algo,
                    chosen,
                    all,
                    skipped,
                    obj == Objective.VIPER
                            ? "viper (a request costs the training loss of the version serving it)"
                            : "staleness ("
                                    + (staleness.isNone()
                                            ? "no drift measured: the same as viper"
                                            : staleness.describe() + ", " + from)
                                    + ")");
        }
        if (!json) {
            for (String w : warnings) {
                out.println("warning      " + w);
            }
        }
        if (plot != null) {
            SchedulePlot.write(plot, log, curve, in, chosen, fixedCurve == null ? "fitted " : "given ", rmse);
            if (!json) {
                out.println("plot         " + plot);
            }
        }
        out.flush();
        return 0;
    }

    private void printText(
            PrintWriter out,
            LossCurve curve,
            FitResult fit,
            Double rmse,
            int warm,
            Algorithm algo,
            Schedule chosen,
            Map<Algorithm, Schedule> all,
            Map<Algorithm, String> skipped,
            String objectiveLine) {
        CurveFamily family = CurveFamily.parse(curve.name());
        out.println("curve        " + curve.name() + " = " + family.formula() + "   "
                + curve.describe().substring(curve.name().length()).strip());
        if (fit != null) {
            StringBuilder cands = new StringBuilder();
            for (FitResult.Candidate c : fit.candidates()) {
                if (!cands.isEmpty()) {
                    cands.append(", ");
                }
                cands.append(c.family().displayName()).append(' ').append(c.ok() ? fmt(c.holdoutError()) : "failed");
            }
            out.println("fit error    RMSE " + fmt(fit.rmse()) + " over " + warm + " warm-up losses; held-back RMSE "
                    + fmt(fit.holdoutError()) + " (" + cands + ")");
        } else {
            out.println("fit error    "
                    + (rmse == null
                            ? "none (curve given with --curve)"
                            : "RMSE " + fmt(rmse) + " over " + warm + " warm-up losses (curve given with --curve)"));
        }
        out.println("objective    " + objectiveLine);
        out.println("algorithm    " + algo.displayName() + " (" + chosen.detail() + ")");
        out.println("checkpoints  " + chosen.count() + ": " + chosen.checkpointsText(12));
        out.println(String.format(
                Locale.ROOT,
                "CIL          %s (predicted loss summed over the %.6g requests: loss units x requests)   training"
                        + " overhead %.6g s",
                cil(chosen.cil()),
                inferences,
                chosen.overheadSeconds()));
        out.println();
        out.println(String.format(
                Locale.ROOT,
                "%-10s %11s  %-20s %12s  %s",
                "algorithm",
                "checkpoints",
                "CIL",
                "overhead_s",
                "schedule"));
        for (Map.Entry<Algorithm, Schedule> e : all.entrySet()) {
            Schedule s = e.getValue();
            out.println(String.format(
                    Locale.ROOT,
                    "%-10s %11d  %-20s %12.6g  %s%s",
                    e.getKey().displayName(),
                    s.count(),
                    cil(s.cil()),
                    s.overheadSeconds(),
                    s.detail(),
                    e.getKey() == algo ? "  <- chosen" : ""));
        }
        for (Map.Entry<Algorithm, String> e : skipped.entrySet()) {
            out.println(String.format(
                    Locale.ROOT, "%-10s %11s  not compared: %s", e.getKey().displayName(), "-", e.getValue()));
        }
    }

    private static String fmt(double v) {
        return String.format(Locale.ROOT, "%.4g", v);
    }

    private static String cil(double v) {
        return String.format(Locale.ROOT, "%.12g", v);
    }
}
