package io.viper.demo;

import io.viper.examples.digits.Trainer;
import io.viper.predictor.CostModel;
import io.viper.predictor.CurveFitter;
import io.viper.predictor.FitResult;
import io.viper.scheduler.CheckpointPlanner;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import io.viper.scheduler.Schedule;
import io.viper.scheduler.ScheduleInput;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Map;

/**
 * What the scheduler planned for a demo, before any process starts: the curve fitted on the
 * warm-up, the costs, and every policy's checkpoint iterations.
 *
 * @param fit the loss curve fitted on the warm-up's batch losses
 * @param input the schedule input built from it and the settings
 * @param epochIters one pass over the training images, the {@code epoch} interval
 * @param trainImages the training images of the stream
 * @param adaptiveThreshold the drop threshold of {@code adaptive}, from the warm-up losses
 * @param schedules every policy's schedule, in the order of {@link DemoSettings#policies()}
 * @param modelBytes the size of one checkpoint
 */
public record DemoPlan(FitResult fit, ScheduleInput input, long epochIters, int trainImages, double adaptiveThreshold,
                       Map<Algorithm, Schedule> schedules, long modelBytes) {
    /** The cap on checkpoints given to fixed, adaptive and optimal. */
    public static final int MAX_CHECKPOINTS = CheckpointPlanner.DEFAULT_MAX_CHECKPOINTS;

    /** {@link #of(DemoSettings, CostModel)} with the cost model's defaults (no measurement). */
    public static DemoPlan of(DemoSettings s) {
        return of(s, CostModel.defaults());
    }

    /**
     * Trains the deterministic warm-up (iterations 1..s) as each producer will, fits the loss curve on
     * it, takes {@code t_train} from the pace, {@code t_infer} from the request rate and {@code t_s},
     * {@code t_load} from {@code costs} (the demo measures them first, {@link TransferCalibration}),
     * and plans every policy. The same settings and costs give the same plan.
     */
    public static DemoPlan of(DemoSettings s, CostModel costs) {
        long bytes = modelBytes(s);
        String path = s.transport().costPath();
        return of(s, costs.saveSeconds(path, bytes), costs.loadSeconds(path, bytes));
    }

    /** The plan with these {@code t_s} and {@code t_load}, in seconds (as a report's JSON gives them). */
    public static DemoPlan of(DemoSettings s, double tSaveSeconds, double tLoadSeconds) {
        Trainer trainer = Trainer.defaults(s.end(), s.seed());
        double[] xs = new double[(int) s.warmup()];
        double[] ys = new double[xs.length];
        for (int i = 0; i < xs.length; i++) {
            ys[i] = trainer.step();
            xs[i] = trainer.iteration();
        }
        FitResult fit = new CurveFitter().fit(xs, ys);
        long bytes = 4L * trainer.model().parameterCount();
        ScheduleInput in = new ScheduleInput(fit.curve(), s.warmup(), s.end(), s.requests(), s.paceNanos() / 1e9,
                tSaveSeconds, tLoadSeconds, 1.0 / s.rate());
        int trainImages = trainer.stream().trainingIndices().length;
        long epochIters = Math.ceilDiv(trainImages, trainer.batchSize());
        double threshold = CheckpointPlanner.adaptiveThreshold(ys);
        Map<Algorithm, Schedule> schedules = new CheckpointPlanner(in).plan(new LinkedHashSet<>(s.policies()),
                new CheckpointPlanner.Options(MAX_CHECKPOINTS, threshold, epochIters));
        return new DemoPlan(fit, in, epochIters, trainImages, threshold, Collections.unmodifiableMap(schedules), bytes);
    }

    /** The size of one checkpoint of the demo's model: its parameters as F32. */
    public static long modelBytes(DemoSettings s) {
        return 4L * Trainer.defaults(s.end(), s.seed()).model().parameterCount();
    }
}
