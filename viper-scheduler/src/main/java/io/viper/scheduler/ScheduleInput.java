package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import io.viper.predictor.LossCurve;
import io.viper.predictor.StalenessModel;
import java.util.function.UnaryOperator;

/**
 * Everything the CIL simulator needs: the predicted loss curve, the iteration range and the costs.
 *
 * <p>The consumer starts with the model of iteration {@code warmup} (s); checkpoints may be taken at iterations
 * {@code s+1..end}. Times are in seconds; {@code inferences} (N) is a real number. {@code staleness} says how a serving
 * version's loss grows with its age ({@link Objective}): {@link StalenessModel#NONE} is Viper's objective, where a
 * version serves with its training loss.
 *
 * @param curve predicted loss {@code L(i)} for iteration i
 * @param warmup warm-up end s (at least 0)
 * @param end last iteration e (greater than s)
 * @param inferences total inference requests N of the run (positive)
 * @param tTrain seconds per training iteration (positive: the online policy serves {@code t_train / t_infer} requests
 *     per iteration, a ratio that must be a positive double)
 * @param tSave producer stall per checkpoint {@code t_s} (at least 0)
 * @param tLoad consumer load time {@code t_load} (at least 0)
 * @param tInfer seconds per inference request (positive)
 * @param staleness how much more a version loses per iteration it serves ({@link StalenessModel#NONE}: Viper's
 *     objective)
 */
public record ScheduleInput(
        LossCurve curve,
        long warmup,
        long end,
        double inferences,
        double tTrain,
        double tSave,
        double tLoad,
        double tInfer,
        StalenessModel staleness) {

    /** The largest {@code end - warmup} accepted (the simulator keeps one loss per iteration). */
    public static final long MAX_SPAN = 50_000_000L;

    /** Validates every field; each problem is one line naming the value. */
    public ScheduleInput {
        if (curve == null) {
            throw new ViperConfigException("schedule: the loss curve is missing");
        }
        checkNumbers(
                warmup,
                end,
                inferences,
                tTrain,
                tSave,
                tLoad,
                tInfer,
                "schedule: ",
                n -> n.equals("warmup") ? "the warm-up end" : n);
        if (staleness == null) {
            throw new ViperConfigException(
                    "schedule: the staleness model is missing (StalenessModel.NONE for Viper's objective)");
        }
    }

    /** An input under Viper's objective: a version serves with its training loss ({@link StalenessModel#NONE}). */
    public ScheduleInput(
            LossCurve curve,
            long warmup,
            long end,
            double inferences,
            double tTrain,
            double tSave,
            double tLoad,
            double tInfer) {
        this(curve, warmup, end, inferences, tTrain, tSave, tLoad, tInfer, StalenessModel.NONE);
    }

    /** This input with another staleness model. */
    public ScheduleInput withStaleness(StalenessModel model) {
        return new ScheduleInput(curve, warmup, end, inferences, tTrain, tSave, tLoad, tInfer, model);
    }

    /**
     * The objective this input is scored by: {@link Objective#VIPER} without drift, else {@link Objective#STALENESS}.
     */
    public Objective objective() {
        return staleness.isNone() ? Objective.VIPER : Objective.STALENESS;
    }

    /** The number of iterations after warm-up, {@code e - s}. */
    public int span() {
        return (int) (end - warmup);
    }

    /**
     * Checks the numbers the constructor checks, for a caller that wants them refused in its own terms before it builds
     * a curve: each message starts with {@code prefix} and names a value by {@code name} applied to its key
     * ({@code warmup}, {@code end}, {@code inferences}, {@code t-train}, {@code t-save}, {@code t-load},
     * {@code t-infer}); {@code viper schedule} passes its flags.
     *
     * @throws ViperConfigException for the first value out of range
     */
    public static void checkNumbers(
            long warmup,
            long end,
            double inferences,
            double tTrain,
            double tSave,
            double tLoad,
            double tInfer,
            String prefix,
            UnaryOperator<String> name) {
        if (warmup < 0) {
            throw new ViperConfigException(prefix + name.apply("warmup") + " must be at least 0, got " + warmup);
        }
        if (end <= warmup) {
            throw new ViperConfigException(prefix + name.apply("end") + " (" + end + ") must be greater than "
                    + name.apply("warmup") + " (" + warmup + ")");
        }
        if (end - warmup > MAX_SPAN) {
            throw new ViperConfigException(prefix + name.apply("end") + " - " + name.apply("warmup") + " = "
                    + (end - warmup) + " iterations exceeds the limit of " + MAX_SPAN);
        }
        positive(prefix, name.apply("inferences"), inferences);
        positive(prefix, name.apply("t-train"), tTrain);
        nonNegative(prefix, name.apply("t-save"), tSave);
        nonNegative(prefix, name.apply("t-load"), tLoad);
        positive(prefix, name.apply("t-infer"), tInfer);
        double perIteration = tTrain / tInfer;
        if (perIteration == 0 || Double.isInfinite(perIteration)) {
            throw new ViperConfigException(prefix + name.apply("t-train") + " / " + name.apply("t-infer")
                    + " (requests per training iteration) = " + tTrain + " / " + tInfer
                    + " is beyond the range of a double");
        }
        // a schedule's overhead is K * t_save with K up to the span: it must stay a number to compare
        if (Double.isInfinite(tSave * (end - warmup))) {
            throw new ViperConfigException(prefix + name.apply("t-save") + " (" + tSave + ") x " + (end - warmup)
                    + " iterations, the overhead of a checkpoint at every one, is beyond the range of a double");
        }
    }

    private static void positive(String prefix, String name, double v) {
        if (!(v > 0) || !Double.isFinite(v)) {
            throw new ViperConfigException(prefix + name + " must be a positive number, got " + v);
        }
    }

    private static void nonNegative(String prefix, String name, double v) {
        if (!(v >= 0) || !Double.isFinite(v)) {
            throw new ViperConfigException(prefix + name + " must be a non-negative number, got " + v);
        }
    }
}
