package io.viper.scheduler;

import io.viper.scheduler.CheckpointPlanner.Algorithm;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a plan should not be trusted for, in one line each, for {@code viper schedule} to print beside its advice: a
 * fitted curve that rises after the warm-up (a noisy or still-rising loss log: every schedule then says a checkpoint
 * only makes things worse), a warm-up too short to fit a curve on, a fit whose error is large against what the curve
 * falls after the warm-up, a schedule that fell back ({@link AdaptiveAlgorithm}), and a schedule far from the best
 * compared. Stateless.
 */
public final class PlanWarnings {
    /** Fewer warm-up losses than this are too few to tell the curve's shape from noise. */
    public static final int MIN_WARMUP_LOSSES = 20;
    /** A schedule whose predicted CIL is this many times the best one's is called far from it. */
    public static final double FAR_FROM_BEST = 1.25;

    private PlanWarnings() {}

    /**
     * The warnings for a plan over {@code in}.
     *
     * @param warmupLosses how many warm-up losses the curve was fitted on (0: the curve was given)
     * @param rmse the fit's error on them, or NaN when unknown
     * @param planned the schedules compared, the chosen one among them
     */
    public static List<String> of(ScheduleInput in, int warmupLosses, double rmse, Map<Algorithm, Schedule> planned) {
        List<String> out = new ArrayList<>();
        long s = in.warmup();
        long e = in.end();
        double atS = in.curve().value((double) s);
        double atE = in.curve().value((double) e);
        if (atE > atS) {
            out.add(String.format(
                    Locale.ROOT,
                    "the fitted curve rises after the warm-up (%.4g at iteration %d, %.4g at %d): every schedule"
                            + " then predicts that a checkpoint only serves a worse model. The warm-up's losses are"
                            + " noisy or still rising; fit on a longer warm-up, or on held-out losses",
                    atS,
                    s,
                    atE,
                    e));
        }
        if (warmupLosses > 0 && warmupLosses < MIN_WARMUP_LOSSES) {
            out.add(String.format(
                    Locale.ROOT,
                    "only %d warm-up losses: too few to tell the curve's shape from noise (at least %d); the"
                            + " schedules rest on a guess",
                    warmupLosses,
                    MIN_WARMUP_LOSSES));
        }
        double fall = Math.abs(atS - atE);
        if (Double.isFinite(rmse) && rmse > 0 && warmupLosses > 0 && rmse > fall) {
            out.add(String.format(
                    Locale.ROOT,
                    "the fit's error (RMSE %.4g) is larger than all the curve predicts the loss falls after the"
                            + " warm-up (%.4g): the order of the schedules is within the noise",
                    rmse,
                    fall));
        }
        Schedule best = null;
        for (Schedule sc : planned.values()) {
            if (sc.count() > 0 && (best == null || sc.cil() < best.cil())) {
                best = sc;
            }
        }
        for (Map.Entry<Algorithm, Schedule> x : planned.entrySet()) {
            Schedule sc = x.getValue();
            if (sc.detail().contains("FALLBACK")) {
                out.add(x.getKey().displayName() + " fell back: " + sc.detail());
            }
            if (best != null && sc != best && sc.cil() > FAR_FROM_BEST * best.cil()) {
                out.add(String.format(
                        Locale.ROOT,
                        "%s's predicted CIL is %.3gx %s's (%d against %d checkpoints): %s",
                        x.getKey().displayName(),
                        sc.cil() / best.cil(),
                        best.algorithm(),
                        sc.count(),
                        best.count(),
                        x.getKey() == Algorithm.ADAPTIVE
                                ? "its drop threshold comes from the warm-up, where the loss falls much faster than"
                                        + " after it, so it publishes rarely"
                                : "do not take it over the best one without a reason"));
            }
        }
        return out;
    }
}
