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
 *
 * <p><b>Never silently none.</b> When the predicted serving losses never fall by the threshold after the warm-up (the
 * threshold comes from the warm-up, where the loss falls far faster than after it), the rule would take no checkpoint
 * and serve the warm-up model to the end. It then falls back, and its {@link Schedule#detail()} says so: to the same
 * rule with the threshold at the whole predicted fall spread over the cap, {@code (L_0 - min L) / (maxCheckpoints +
 * 1)}, or, where the predicted losses never fall at all, to {@code maxCheckpoints} checkpoints evenly spaced.
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
        long[] out = drops(sim, loss, threshold);
        String detail = String.format(Locale.ROOT, "loss drop > %.4g", threshold);
        if (out.length == 0) {
            int m = sim.input().span();
            double fall = 0;
            for (int j = 1; j <= m; j++) {
                fall = Math.max(fall, loss[0] - loss[j]);
            }
            double lowered = fall / (maxCheckpoints + 1.0);
            out = lowered > 0 ? drops(sim, loss, lowered) : new long[0];
            if (out.length > 0) {
                detail = String.format(
                        Locale.ROOT,
                        "loss drop > %.4g: FALLBACK, the predicted loss never falls by the threshold %.4g after the"
                                + " warm-up (%.4g in all), so its fall spread over %d checkpoints",
                        lowered,
                        threshold,
                        fall,
                        maxCheckpoints);
            } else {
                int k = Math.min(m, maxCheckpoints);
                out = new long[k];
                for (int i = 0; i < k; i++) {
                    out[i] = sim.input().warmup() + (long) (i + 1) * m / (k + 1);
                }
                out = Arrays.stream(out).distinct().toArray();
                detail = String.format(
                        Locale.ROOT,
                        "FALLBACK to %d evenly spaced: the predicted loss never falls after the warm-up, so no drop"
                                + " reaches the threshold %.4g",
                        out.length,
                        threshold);
            }
        }
        return sim.schedule(name(), out, detail);
    }

    private long[] drops(CilSimulator sim, double[] loss, double drop) {
        int m = sim.input().span();
        long[] out = new long[Math.min(m, maxCheckpoints)];
        int k = 0;
        int last = 0;
        for (int j = 1; j <= m && k < out.length; j++) {
            if (loss[last] - loss[j] > drop) {
                out[k++] = sim.input().warmup() + j;
                last = j;
            }
        }
        return Arrays.copyOf(out, k);
    }
}
