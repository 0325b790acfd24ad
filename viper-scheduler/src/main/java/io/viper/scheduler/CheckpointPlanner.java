package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Plans checkpoint iterations over a {@link ScheduleInput}: the one entry point through which {@code viper schedule},
 * {@code viper demo} and {@link PredictedCheckpointPolicy} compute schedules. {@link #plan} runs the named
 * {@link Algorithm}s, each a {@link ScheduleAlgorithm} that documents its own rule ({@link FixedAlgorithm},
 * {@link AdaptiveAlgorithm}, {@link OptimalAlgorithm}, {@link OnlineAlgorithm}, {@link EpochAlgorithm},
 * {@link NoneAlgorithm}), under the objective of the input ({@link Objective}). Every returned {@link Schedule} carries
 * the CIL computed by {@link CilSimulator#cil(long[])}, and every schedule is deterministic.
 *
 * <p>Immutable once built (the curve is evaluated once, by the simulator); any thread may call it.
 */
public final class CheckpointPlanner {
    /** The default cap on checkpoints for fixed, adaptive and optimal. */
    public static final int DEFAULT_MAX_CHECKPOINTS = 200;

    /** The schedule algorithms, by the names the command line and JSON use. */
    public enum Algorithm {
        /** The best single interval ({@link FixedAlgorithm}). */
        FIXED,
        /** Viper's greedy loss-drop rule ({@link AdaptiveAlgorithm}). */
        ADAPTIVE,
        /** The exact minimum CIL under a checkpoint cap, ties to even spacing ({@link OptimalAlgorithm}). */
        OPTIMAL,
        /** The online policy's decisions on the predicted losses ({@link OnlineAlgorithm}). */
        ONLINE,
        /** Every {@code epochIters} iterations ({@link EpochAlgorithm}). */
        EPOCH,
        /** No checkpoint: the warm-up model serves to the end ({@link NoneAlgorithm}). */
        NONE;

        /** The lower-case name used on the command line and in JSON. */
        public String displayName() {
            return EnumNames.displayName(this);
        }

        /** Every name, in declaration order, for help texts and errors: {@code fixed, adaptive, ...}. */
        public static String names() {
            return EnumNames.names(values());
        }

        /**
         * The algorithm named {@code name}, ignoring case and surrounding blanks.
         *
         * @throws ViperConfigException for an unknown name, listing the known ones
         */
        public static Algorithm parse(String name) {
            return EnumNames.parse(values(), "algorithm", name);
        }

        /** This algorithm with the settings it takes from {@code options}. */
        public ScheduleAlgorithm with(Options options) {
            return switch (this) {
                case FIXED -> new FixedAlgorithm(options.maxCheckpoints());
                case ADAPTIVE -> new AdaptiveAlgorithm(options.adaptiveThreshold(), options.maxCheckpoints());
                case OPTIMAL -> new OptimalAlgorithm(options.maxCheckpoints());
                case ONLINE -> new OnlineAlgorithm(options.maxCheckpoints());
                case EPOCH -> new EpochAlgorithm(options.epochIters());
                case NONE -> new NoneAlgorithm();
            };
        }
    }

    /**
     * What the algorithms take besides the input; each algorithm checks the values it uses when it is created
     * ({@link Algorithm#with}).
     *
     * @param maxCheckpoints the cap for fixed, adaptive and optimal, the budget of online (at least 1)
     * @param adaptiveThreshold the loss drop that triggers an adaptive checkpoint (see
     *     {@link #adaptiveThreshold(double[])} and {@link #curveThreshold()})
     * @param epochIters the interval of epoch (positive)
     */
    public record Options(int maxCheckpoints, double adaptiveThreshold, long epochIters) {}

    private final CilSimulator sim;

    /** Builds the simulator for {@code input} (evaluates the curve once). */
    public CheckpointPlanner(ScheduleInput input) {
        this(new CilSimulator(input));
    }

    /** Uses an existing simulator. */
    public CheckpointPlanner(CilSimulator simulator) {
        this.sim = simulator;
    }

    /** The simulator used for every CIL. */
    public CilSimulator simulator() {
        return sim;
    }

    /**
     * The schedule of every algorithm in {@code algorithms}, in the set's iteration order (an {@link java.util.EnumSet}
     * gives declaration order, a {@link java.util.LinkedHashSet} the caller's).
     *
     * @throws ViperConfigException if an option an asked-for algorithm uses is out of range, or the input is beyond its
     *     reach
     */
    public Map<Algorithm, Schedule> plan(Set<Algorithm> algorithms, Options options) {
        Map<Algorithm, Schedule> out = new LinkedHashMap<>();
        for (Algorithm a : algorithms) {
            out.put(a, schedule(a, options));
        }
        return out;
    }

    /** The schedule of one algorithm; see {@link #plan}. */
    public Schedule schedule(Algorithm algorithm, Options options) {
        return algorithm.with(options).schedule(sim);
    }

    /**
     * The threshold of the adaptive rule: mean plus one population standard deviation of the consecutive drops
     * {@code losses[i-1] - losses[i]}.
     *
     * @throws ViperConfigException with fewer than two losses or a non-finite one
     */
    public static double adaptiveThreshold(double[] warmupLosses) {
        if (warmupLosses == null || warmupLosses.length < 2) {
            throw new ViperConfigException("adaptive: need at least 2 warm-up losses for the drop threshold, got "
                    + (warmupLosses == null ? 0 : warmupLosses.length));
        }
        int n = warmupLosses.length - 1;
        for (int i = 0; i <= n; i++) {
            if (!Double.isFinite(warmupLosses[i])) {
                throw new ViperConfigException("adaptive: warm-up loss " + (i + 1) + " is not finite");
            }
        }
        // computed on the losses scaled to magnitudes below 1 (UnitScale), so that drops and their
        // squares neither overflow (losses near 1e200) nor underflow (near 1e-200)
        int shift = UnitScale.shift(warmupLosses);
        double[] l = UnitScale.scaled(warmupLosses, shift);
        double mean = 0;
        for (int i = 1; i <= n; i++) {
            mean += l[i - 1] - l[i];
        }
        mean /= n;
        double var = 0;
        for (int i = 1; i <= n; i++) {
            double d = l[i - 1] - l[i] - mean;
            var += d * d;
        }
        return Math.scalb(mean + Math.sqrt(var / n), -shift);
    }

    /**
     * The adaptive threshold from the smooth curve over iterations {@code 1..s}, the same signal the rule is applied
     * to: the mean plus one standard deviation of its consecutive drops, each drop plus the drift per iteration under
     * the staleness-aware objective (a serving version loses that much more per iteration). Batch losses would give a
     * noise-sized threshold that the curve hardly ever drops by.
     *
     * @throws ViperConfigException if s &lt; 2 or the curve is not finite there
     */
    public double curveThreshold() {
        ScheduleInput in = sim.input();
        long s = in.warmup();
        if (s < 2) {
            throw new ViperConfigException(
                    "adaptive: the warm-up end must be at least 2 to take the curve's drops, got " + s);
        }
        if (s > ScheduleInput.MAX_SPAN) {
            throw new ViperConfigException("adaptive: warm-up end " + s + " is too long to sample the curve");
        }
        double rate = in.staleness().ratePerIteration();
        double[] l = new double[(int) s];
        for (int i = 0; i < s; i++) {
            l[i] = in.curve().value(i + 1) - rate * i;
            if (!Double.isFinite(l[i])) {
                throw new ViperConfigException("adaptive: curve " + in.curve().describe()
                        + " is not finite at iteration " + (i + 1) + ", in the warm-up its drop threshold comes from");
            }
        }
        return adaptiveThreshold(l);
    }

    /**
     * The loss drop that would spend {@code budget} checkpoints on the predicted serving losses after the warm-up:
     * their whole fall, {@code L_0 - min L}, over {@code budget + 1}; 0 where they never fall.
     * {@link #curveThreshold()} comes from the warm-up, where the loss falls tens of times faster than after it; above
     * this one, the drop rule leaves most of its budget unspent (in the demo, 2 to 36 of 45 checkpoints depending on
     * the seed).
     */
    public double budgetThreshold(int budget) {
        double[] loss = sim.servingLossesUnsafe();
        double fall = 0;
        for (int j = 1; j < loss.length; j++) {
            fall = Math.max(fall, loss[0] - loss[j]);
        }
        return fall / (Math.max(1, budget) + 1.0);
    }

    /** Returns {@code maxCheckpoints} when it is at least 1, for the algorithms that take a cap. */
    static int checkCap(int maxCheckpoints) {
        if (maxCheckpoints < 1) {
            throw new ViperConfigException("max-checkpoints must be at least 1, got " + maxCheckpoints);
        }
        return maxCheckpoints;
    }
}
