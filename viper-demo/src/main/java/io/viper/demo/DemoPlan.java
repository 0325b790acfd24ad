package io.viper.demo;

import io.viper.TransferPath;
import io.viper.demo.digits.InferenceModel;
import io.viper.demo.digits.Trainer;
import io.viper.predictor.CostModel;
import io.viper.predictor.FitResult;
import io.viper.predictor.StalenessModel;
import io.viper.scheduler.CheckpointPlanner;
import io.viper.scheduler.Objective;
import io.viper.scheduler.OnlineCheckpointPolicy;
import io.viper.scheduler.Schedule;
import io.viper.scheduler.ScheduleInput;
import io.viper.scheduler.StalenessProbe;
import io.viper.scheduler.WarmupPlan;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.Set;

/**
 * What the scheduler planned for a demo, before a run: the curve and the drift fitted on the warm-up, the costs, the
 * budget, and every planned policy's checkpoint iterations ({@code hindsight} is chosen later, from what the runs
 * recorded: {@link Hindsight}).
 *
 * @param fit the loss curve fitted on the warm-up: its held-out losses under the staleness-aware objective, its batch
 *     losses under Viper's
 * @param input the schedule input built from it, the drift and the costs
 * @param epochIters one pass over the training images, the {@code epoch} interval
 * @param trainImages the training images of the stream
 * @param adaptiveThreshold the drop threshold of {@code adaptive}, from the fitted curve over the warm-up
 * @param budget the checkpoints every scheduled policy may take
 * @param schedules every planned policy's schedule (online: the one it would take on the predicted losses), in the
 *     order of the settings
 * @param online the online policy's settings for this plan
 * @param latencyMeasured whether {@code t_load} is a measured update latency (else the cost model's figure)
 * @param modelBytes the size of one checkpoint
 */
public record DemoPlan(
        FitResult fit,
        ScheduleInput input,
        long epochIters,
        int trainImages,
        double adaptiveThreshold,
        int budget,
        Map<DemoPolicy, Schedule> schedules,
        OnlineCheckpointPolicy.Config online,
        boolean latencyMeasured,
        long modelBytes) {
    /**
     * How many warm-up versions are probed against the models after them (spread over the second half of the warm-up).
     */
    private static final int PROBE_VERSIONS = 5;

    /** The plan with the default cost model's {@code t_s} and {@code t_load} (no measurement). */
    public static DemoPlan of(DemoSettings s) {
        return of(s, CostModel.defaults(), OptionalDouble.empty());
    }

    /** The plan with these transfer costs (the demo measures them first, {@link TransferCalibration}). */
    public static DemoPlan of(DemoSettings s, CostModel costs) {
        return of(s, costs, OptionalDouble.empty());
    }

    /**
     * The plan with {@code t_s} from {@code costs} and {@code t_load} from {@code measuredLatencySeconds} (from
     * {@code costs} when empty).
     */
    public static DemoPlan of(DemoSettings s, CostModel costs, OptionalDouble measuredLatencySeconds) {
        long bytes = modelBytes(s);
        TransferPath path = s.transport().path();
        return of(
                s,
                costs.saveSeconds(path, bytes),
                measuredLatencySeconds.orElse(costs.loadSeconds(path, bytes)),
                measuredLatencySeconds.isPresent());
    }

    /**
     * Trains the deterministic warm-up (iterations 1..s) as each producer will, fits the loss curve on its held-out
     * losses (each model scored on the probe's validation batch; under Viper's objective, on its batch losses, as Viper
     * does) and, under the staleness-aware objective, the drift on probes of older warm-up versions
     * ({@link ValidationProbe}); takes {@code t_train} from the pace, {@code t_infer} from the request rate, and
     * {@code t_s}, {@code t_load} as given (in seconds, as a report's JSON gives them); the budget is the settings' or
     * the number of checkpoints {@code epoch} takes; and plans every policy. The same arguments give the same plan.
     *
     * @param latencyMeasured whether {@code tLoadSeconds} is the update latency runs measured
     */
    public static DemoPlan of(DemoSettings s, double tSaveSeconds, double tLoadSeconds, boolean latencyMeasured) {
        Trainer trainer = s.workload().trainer(s.end(), s.seed());
        double[] xs = new double[(int) s.warmup()];
        double[] ys = new double[xs.length];
        // probes: versions spread over the second half of the warm-up, each scored against the later models
        List<double[]> probes = new ArrayList<>();
        long firstVersion = s.warmup() / 2;
        long step = Math.max(1, (s.warmup() - firstVersion) / PROBE_VERSIONS);
        ValidationProbe probe = null;
        long version = -1;
        // Under the staleness-aware objective the curve is the loss a request sees: each warm-up model
        // scored on held-out images (the probes' batches), the scale the drift and the online policy's
        // gap are measured on. A curve of batch losses, which fall below held-out ones as training goes,
        // predicted CILs 30-90% below the measured. Viper's objective keeps its batch losses.
        ValidationProbe heldOut = s.curveOnHeldOutLosses()
                ? new ValidationProbe(trainer.stream(), trainer.model(), trainer.snapshot(), s.seed())
                : null;
        for (int i = 0; i < xs.length; i++) {
            ys[i] = trainer.step();
            xs[i] = trainer.iteration();
            long it = trainer.iteration();
            StalenessProbe.Measurement m = probe != null ? probe.measure(it) : null;
            if (m != null) {
                probes.add(new double[] {version, it, m.deployed(), m.current()});
            }
            if (heldOut != null) {
                // The probe, once there, has just scored the model being trained on the same batch.
                ys[i] = m != null ? m.current() : heldOut.currentLoss(it);
            }
            if (it >= firstVersion && (it - firstVersion) % step == 0) {
                InferenceModel snapshot = trainer.snapshot();
                if (probe == null) {
                    probe = new ValidationProbe(trainer.stream(), trainer.model(), snapshot, s.seed());
                }
                probe.deployed(snapshot);
                version = it;
            }
        }
        WarmupPlan.Run run = new WarmupPlan.Run(
                s.warmup(), s.end(), s.requests(), s.paceNanos() / 1e9, tSaveSeconds, tLoadSeconds, 1.0 / s.rate());
        WarmupPlan plan = WarmupPlan.fit(
                xs,
                ys,
                run,
                curve -> s.objective() == Objective.STALENESS
                        ? StalenessModel.fitCautious(
                                curve, column(probes, 0), column(probes, 1), column(probes, 2), column(probes, 3))
                        : StalenessModel.NONE);
        FitResult fit = plan.fit().orElseThrow();
        ScheduleInput in = plan.input();
        long bytes = 4L * trainer.model().parameterCount();
        int trainImages = trainer.stream().trainingIndices().length;
        long epochIters = Math.ceilDiv(trainImages, trainer.batchSize());
        CheckpointPlanner planner = plan.planner();
        int epochCount = planner.schedule(
                        CheckpointPlanner.Algorithm.EPOCH, new CheckpointPlanner.Options(1, 0, epochIters))
                .count();
        int budget = s.budget().orElse(Math.max(1, epochCount));
        double threshold = planner.curveThreshold();
        List<CheckpointPlanner.Algorithm> algorithms =
                s.policies().stream().flatMap(p -> p.planner().stream()).toList();
        Map<CheckpointPlanner.Algorithm, Schedule> planned = plan.schedules(
                        algorithms, Set.copyOf(algorithms), budget, epochIters)
                .planned();
        Map<DemoPolicy, Schedule> schedules = new LinkedHashMap<>();
        for (DemoPolicy p : s.policies()) {
            p.planner().ifPresent(a -> schedules.put(p, planned.get(a)));
        }
        return new DemoPlan(
                fit,
                in,
                epochIters,
                trainImages,
                threshold,
                budget,
                Collections.unmodifiableMap(schedules),
                OnlineCheckpointPolicy.Config.of(planner.simulator(), budget),
                latencyMeasured,
                bytes);
    }

    private static double[] column(List<double[]> rows, int c) {
        return rows.stream().mapToDouble(r -> r[c]).toArray();
    }

    /** The size of one checkpoint of the demo's model: its parameters as F32. */
    public static long modelBytes(DemoSettings s) {
        return 4L * s.workload().trainer(s.end(), s.seed()).model().parameterCount();
    }
}
