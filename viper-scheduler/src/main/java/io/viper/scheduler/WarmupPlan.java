package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFitter;
import io.viper.predictor.FitResult;
import io.viper.predictor.LossCurve;
import io.viper.predictor.StalenessModel;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * Fit, then plan: from a run's warm-up losses (or a curve given as it is) and its costs to the checkpoint schedules of
 * the algorithms asked for. The one assembly of the curve fit, the drift, the {@link ScheduleInput} and the
 * {@link CheckpointPlanner} behind {@code viper schedule} and the plan of {@code viper demo}. Immutable; the same
 * arguments give the same plan.
 *
 * @param fit the fit on the warm-up losses; empty when the curve was given
 * @param input the curve, the run's numbers and the drift
 * @param planner the planner over {@code input}, for what the callers take besides the schedules
 */
public record WarmupPlan(Optional<FitResult> fit, ScheduleInput input, CheckpointPlanner planner) {
    /**
     * The numbers of a run besides its curve and drift, as {@link ScheduleInput} takes them.
     *
     * @param warmup the warm-up end s
     * @param end the last training iteration e
     * @param inferences the requests of the run
     * @param tTrain seconds per training iteration
     * @param tSave the producer's stall per checkpoint, seconds
     * @param tLoad the consumer's load time per checkpoint, seconds
     * @param tInfer seconds per request
     */
    public record Run(
            long warmup, long end, double inferences, double tTrain, double tSave, double tLoad, double tInfer) {}

    /**
     * The schedules of a plan.
     *
     * @param planned each algorithm's schedule, in the order asked
     * @param skipped each algorithm that cannot run on this input, with the reason (without its name)
     */
    public record Schedules(Map<Algorithm, Schedule> planned, Map<Algorithm, String> skipped) {}

    /**
     * Fits the curve on the warm-up losses {@code ys[i]} at iterations {@code xs[i]}, then the drift ({@code drift} is
     * given the fitted curve), and makes the planner.
     *
     * @throws ViperConfigException if no curve fits, or a number of {@code run} is out of range
     */
    public static WarmupPlan fit(double[] xs, double[] ys, Run run, Function<LossCurve, StalenessModel> drift) {
        FitResult fit = new CurveFitter().fit(xs, ys);
        return of(Optional.of(fit), fit.curve(), run, drift);
    }

    /** The plan on {@code curve} as it is. */
    public static WarmupPlan of(LossCurve curve, Run run, Function<LossCurve, StalenessModel> drift) {
        return of(Optional.empty(), curve, run, drift);
    }

    private static WarmupPlan of(
            Optional<FitResult> fit, LossCurve curve, Run run, Function<LossCurve, StalenessModel> drift) {
        ScheduleInput in = new ScheduleInput(
                curve,
                run.warmup(),
                run.end(),
                run.inferences(),
                run.tTrain(),
                run.tSave(),
                run.tLoad(),
                run.tInfer(),
                drift.apply(curve));
        return new WarmupPlan(fit, in, new CheckpointPlanner(in));
    }

    /** The curve planned on: the fitted one, or the one given. */
    public LossCurve curve() {
        return input.curve();
    }

    /**
     * The schedule of each of {@code algorithms}, with at most {@code budget} checkpoints (online's budget) and
     * {@code epochIters} for epoch; adaptive's threshold is the curve's ({@link CheckpointPlanner#curveThreshold()}),
     * or the lower drop that would spend the budget on the predicted curve ({@link CheckpointPlanner#budgetThreshold}).
     * An algorithm that cannot run on this input (adaptive with a warm-up of 1, optimal over a span too long for its
     * table) is skipped with the reason, unless it is in {@code required}: then its failure is thrown.
     *
     * @throws ViperConfigException for a required algorithm that cannot run
     */
    public Schedules schedules(Collection<Algorithm> algorithms, Set<Algorithm> required, int budget, long epochIters) {
        Map<Algorithm, Schedule> planned = new LinkedHashMap<>();
        Map<Algorithm, String> skipped = new LinkedHashMap<>();
        for (Algorithm a : algorithms) {
            try {
                // adaptive's threshold: the drops of the smooth curve it is applied to, not of the noisy losses,
                // and no higher than the drop that spends the budget on the predicted curve
                double curve = a == Algorithm.ADAPTIVE ? planner.curveThreshold() : Double.NaN;
                double spend = a == Algorithm.ADAPTIVE ? planner.budgetThreshold(budget) : Double.NaN;
                boolean lowered = spend > 0 && spend < curve;
                Schedule s =
                        planner.schedule(a, new CheckpointPlanner.Options(budget, lowered ? spend : curve, epochIters));
                if (lowered && !s.detail().contains("FALLBACK")) {
                    s = new Schedule(
                            s.algorithm(),
                            s.checkpoints(),
                            s.cil(),
                            s.overheadSeconds(),
                            String.format(
                                    Locale.ROOT,
                                    "%s: the warm-up's drop threshold %.4g lowered to spend the budget",
                                    s.detail(),
                                    curve));
                }
                planned.put(a, s);
            } catch (ViperConfigException e) {
                if (required.contains(a)) {
                    throw e;
                }
                String why = e.getMessage();
                String name = a.displayName() + ": ";
                skipped.put(a, why.startsWith(name) ? why.substring(name.length()) : why);
            }
        }
        return new Schedules(Collections.unmodifiableMap(planned), Collections.unmodifiableMap(skipped));
    }
}
