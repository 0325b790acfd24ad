package io.viper.scheduler;

/**
 * {@code fixed}: checkpoints at {@code s+v, s+2v, ...} up to e, for the interval v in {@code 1..e-s} with the lowest
 * CIL (ties: the smaller v), among the v giving at most {@code maxCheckpoints} checkpoints. Each v is evaluated
 * directly and the evaluation stops once the N requests are used up, so the search costs at most {@code sum_v (e-s)/v =
 * O((e-s) log(e-s))}.
 */
public final class FixedAlgorithm implements ScheduleAlgorithm {
    private final int maxCheckpoints;

    /**
     * The best single interval with at most {@code maxCheckpoints} checkpoints.
     *
     * @throws io.viper.errors.ViperConfigException if {@code maxCheckpoints} is below 1
     */
    public FixedAlgorithm(int maxCheckpoints) {
        this.maxCheckpoints = CheckpointPlanner.checkCap(maxCheckpoints);
    }

    @Override
    public String name() {
        return CheckpointPlanner.Algorithm.FIXED.displayName();
    }

    @Override
    public Schedule schedule(CilSimulator sim) {
        int m = sim.input().span();
        int bestV = -1;
        double best = Double.POSITIVE_INFINITY;
        for (int v = 1; v <= m; v++) {
            if (m / v > maxCheckpoints) {
                continue;
            }
            double c = sim.cilEvery(v);
            // the simulator keeps every CIL finite; the first v is taken whatever, so that one always is
            if (bestV < 0 || c < best) {
                best = c;
                bestV = v;
            }
        }
        long[] out = new long[m / bestV];
        for (int i = 0; i < out.length; i++) {
            out[i] = sim.input().warmup() + (long) (i + 1) * bestV;
        }
        return sim.schedule(name(), out, "every " + bestV + " iterations");
    }
}
