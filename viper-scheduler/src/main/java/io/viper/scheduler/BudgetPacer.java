package io.viper.scheduler;

/**
 * Keeps {@link OnlineCheckpointPolicy} on its budget of K checkpoints over {@code s+1..e}: at iteration t at most
 * {@code floor(K * (t - s) / (e - s)) + burst} may have been published (the elapsed share of the budget, plus a few for
 * a burst), never more than K; and the threshold on the accumulated gap is steered toward that pace: each iteration it
 * is multiplied by {@code exp(g * (published - K * (t - s) / (e - s)) / K)}, up when the policy is ahead of the pace
 * ({@code g = gain}) and down when it lags ({@code g = }{@value #CATCH_UP}{@code * gain}: a budget left unspent is
 * lost, while running ahead is already bounded by the allowance), except while held ({@link #hold}): after a change the
 * burst of checkpoints it causes is what the budget saved in quiet stretches is for, and must not raise the threshold
 * for the next change. Lagging the pace, a checkpoint is also {@linkplain #due due} after a long enough gap, so that
 * the budget gets spent; outside a hold, none comes sooner than {@linkplain #quietSpacing half the even spacing} of
 * what is left, so that catching up is not a burst, and in a hold the burst is spread over it.
 *
 * <p>Not thread-safe: the training thread owns it.
 */
final class BudgetPacer {
    /** How much faster the threshold falls when the policy lags than it rises when it runs ahead. */
    static final double CATCH_UP = 3;
    /**
     * How many times the even spacing of the checkpoints left may pass without one before {@link #due} forces one. At 1
     * every lag is spent at once, also the budget saved in a quiet stretch for the burst a change will call for; at 2
     * only a gap that long (1.5 and 3 served more loss in the demo).
     */
    static final double SPEND_SLACK = 2;
    /**
     * Outside the hold after a change, the fewest iterations between two checkpoints as a share of the even spacing of
     * the checkpoints left ({@link #quietSpacing}). A policy that lagged its pace through a quiet stretch otherwise
     * caught up in a burst when the threshold had fallen far enough (on the demo's stationary stream five checkpoints
     * within ten iterations, twice a run), and on a steady stream a checkpoint that soon after the last one buys almost
     * nothing. In the demo, three runs each: stationary 723.2-723.3 against 725.0-725.1 without (-0.25%), seed 42 the
     * same, seed 7 0.1% more. After a change the burst is what the budget was saved for, so the hold lifts it.
     */
    static final double QUIET_SPACING = 0.5;

    /** How far (in log) {@link #calibrate} lowers the threshold toward the measured one. */
    static final double DOWN_STEP = 0.25;

    private final long warmup;
    private final long end;
    private final int budget;
    private final int burst;
    private final double gain;
    private final double floor;
    private final double ceiling;
    private double threshold;
    private long heldUntil = Long.MIN_VALUE;

    /**
     * @param warmup s
     * @param end e
     * @param budget K, at least 1
     * @param burst how many checkpoints may run ahead of the pace, at least 0
     * @param initialThreshold the starting threshold, positive
     * @param gain how fast the threshold follows the pace, at least 0 (0: fixed)
     */
    BudgetPacer(long warmup, long end, int budget, int burst, double initialThreshold, double gain) {
        this.warmup = warmup;
        this.end = end;
        this.budget = budget;
        this.burst = burst;
        this.gain = gain;
        this.threshold = initialThreshold;
        this.floor = initialThreshold * 1e-6;
        this.ceiling = initialThreshold * 1e6;
    }

    /** How many checkpoints may have been published after {@code iteration}. */
    long allowance(long iteration) {
        return Math.min(budget, (long) Math.floor(paced(iteration)) + burst);
    }

    /**
     * Whether a checkpoint is due at {@code iteration} whatever the threshold says, so that the budget gets spent: the
     * policy lags the pace by at least one checkpoint, and the last one, at {@code deployed}, is {@value #SPEND_SLACK}
     * times as far back as the checkpoints left would be apart if spread evenly from it to the end. The threshold falls
     * too slowly to spend what a quiet end of the run leaves (the demo's runs ended with 3 or 4 of 45 unspent), and a
     * budget unspent at the end is lost.
     */
    boolean due(long iteration, long deployed, int published) {
        return published < budget
                && published + 1 <= paced(iteration)
                && iteration - deployed >= SPEND_SLACK * evenSpacing(deployed, published);
    }

    /**
     * The fewest iterations after the last checkpoint, at {@code deployed}, before the next one at {@code iteration}:
     * {@value #QUIET_SPACING} times the even spacing of the checkpoints left, {@code (end - deployed) / (left + 1)},
     * rounded down; 0 with nothing left. While held (after a change) instead the even spacing, from {@code deployed} to
     * the hold's end, of the checkpoints the allowance leaves by then, {@code (heldUntil - deployed) / (left + 1)}
     * rounded down (0 with none left): the burst the change calls for is what the budget was saved for, but the gap
     * then stays above the threshold, and without a spacing the burst spent the allowance as fast as the minimum
     * spacing let it (on the demo's stages, seeds 1-20, checkpoints in the 30 iterations after a detected change a
     * median 6 iterations apart, where the best schedule in hindsight put them 10 apart), leaving less for later.
     */
    long quietSpacing(long iteration, long deployed, int published) {
        if (published >= budget) {
            return 0;
        }
        if (iteration <= heldUntil) {
            long left = allowance(heldUntil) - published;
            return left <= 0 ? 0 : (long) Math.floor((double) (heldUntil - deployed) / (left + 1));
        }
        return (long) Math.floor(QUIET_SPACING * evenSpacing(deployed, published));
    }

    /**
     * How far apart the checkpoints left would be, spread evenly from the last one, at {@code deployed}, to the end.
     */
    double evenSpacing(long deployed, int published) {
        return (double) (end - deployed) / (budget - published + 1);
    }

    /** Whether the threshold is held at {@code iteration} (after a change). */
    boolean held(long iteration) {
        return iteration <= heldUntil;
    }

    /** Keeps the threshold as it is up to {@code iteration}. */
    void hold(long iteration) {
        heldUntil = Math.max(heldUntil, iteration);
    }

    /** Steers the threshold by how far {@code published} is from the pace at {@code iteration}, unless held. */
    void adapt(long iteration, int published) {
        if (gain > 0 && iteration > heldUntil) {
            double ahead = published - paced(iteration);
            threshold = Math.clamp(
                    threshold * Math.exp((ahead > 0 ? gain : CATCH_UP * gain) * ahead / budget), floor, ceiling);
        }
    }

    /**
     * Raises the threshold to {@code gap} (never lowers it, never above its ceiling), unless held at {@code iteration}.
     */
    void raiseTo(long iteration, double gap) {
        if (gain > 0 && iteration > heldUntil && gap > threshold) {
            threshold = Math.min(ceiling, gap);
        }
    }

    /**
     * Moves the threshold halfway (in log) toward what the run measured: a checkpoint at {@code iteration}, {@code age}
     * iterations after the last one at {@code deployed}, ends an accumulated gap of {@code gap}; a gap that grows
     * linearly with age accumulates as its square, so the threshold that would have published at the even spacing of
     * the checkpoints left is {@code gap * (spacing / age)^2}. The predicted initial threshold is off by a factor that
     * depends on the seed (the warm-up sees neither the drift nor the stages well), and the slow steering took hundreds
     * of iterations to correct it. Not while held (after a change the gap jumps instead of growing), nor for a gap of
     * 0.
     */
    void calibrate(long iteration, double gap, long age, long deployed, int published) {
        if (gain <= 0 || iteration <= heldUntil || !(gap > 0) || age <= 0 || published >= budget) {
            return;
        }
        double spacing = evenSpacing(deployed, published);
        double measured = gap * (spacing / age) * (spacing / age);
        // down a quarter of the way only: a threshold above the pace is how a quiet stretch saves budget for the
        // burst after a change (the staged stream), so it is not taken back at once
        double step = measured > threshold ? 0.5 : DOWN_STEP;
        threshold = Math.clamp(threshold * Math.pow(measured / threshold, step), floor, ceiling);
    }

    /** Sets the threshold to {@code value}, within its floor and ceiling. */
    void reset(double value) {
        threshold = Math.clamp(value, floor, ceiling);
    }

    /** The accumulated gap at which to publish now. */
    double threshold() {
        return threshold;
    }

    private double paced(long iteration) {
        return (double) budget * (iteration - warmup) / (end - warmup);
    }
}
