package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import java.util.Locale;

/**
 * {@code adaptive}, Viper's greedy rule: walking {@code i = s+1..e}, checkpoint at i when {@code L(last) - L(i)}
 * exceeds the threshold, where {@code last} is the previous checkpoint (initially s) and L the simulator's serving
 * losses (the predicted curve; less the drift under the staleness-aware objective, so that the drop is the gap between
 * the deployed and a fresh version). The threshold is the mean plus one (population) standard deviation of consecutive
 * drops of the same smooth curve over the warm-up ({@link CheckpointPlanner#curveThreshold()}), not of the noisy batch
 * losses, which a smooth curve hardly ever matches. At most {@code maxCheckpoints} are taken.
 */
public final class AdaptiveAlgorithm implements ScheduleAlgorithm {
    private final double threshold;
    private final int maxCheckpoints;

    /**
     * The drop rule with {@code threshold}, at most {@code maxCheckpoints} checkpoints.
     *
     * @throws ViperConfigException if the threshold is NaN or {@code maxCheckpoints} is below 1
     */
    public AdaptiveAlgorithm(double threshold, int maxCheckpoints) {
        this.maxCheckpoints = CheckpointPlanner.checkCap(maxCheckpoints);
        if (Double.isNaN(threshold)) {
            throw new ViperConfigException("adaptive: threshold must be a number");
        }
        this.threshold = threshold;
    }

    @Override
    public String name() {
        return CheckpointPlanner.Algorithm.ADAPTIVE.displayName();
    }

    @Override
    public Schedule schedule(CilSimulator sim) {
        double[] loss = sim.servingLossesUnsafe();
        int m = sim.input().span();
        long[] out = new long[Math.min(m, maxCheckpoints)];
        int k = 0;
        int last = 0;
        for (int j = 1; j <= m && k < out.length; j++) {
            if (loss[last] - loss[j] > threshold) {
                out[k++] = sim.input().warmup() + j;
                last = j;
            }
        }
        return sim.schedule(name(), Arrays.copyOf(out, k), String.format(Locale.ROOT, "loss drop > %.4g", threshold));
    }
}
