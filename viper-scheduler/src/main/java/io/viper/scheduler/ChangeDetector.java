package io.viper.scheduler;

/**
 * Detects when a loss stream jumps up and stays up (new data arriving, the stream shifting), with a one-sided CUSUM on
 * standardised losses. The baseline is an exponentially weighted mean and variance ({@value #SMOOTHING} per
 * observation) started from the first {@value #WARM} observations; each observation adds {@code min(z,
 * }{@value #CLIP}{@code ) - k}, with {@code z = (x - mean) / sd}, to a sum that never goes below 0 (the clip keeps one
 * wild loss from being a change by itself), and the sum passing {@code h} is a change, dated to the first observation
 * after the sum last stood at 0. After a change the baseline starts again from the observations that follow it, so the
 * same change is not reported twice. Slow falls (training making progress) and single spikes do not add up to a change.
 *
 * <p>Not thread-safe: the training thread owns it.
 */
final class ChangeDetector {
    static final int WARM = 10;
    static final double SMOOTHING = 0.05;
    /** The most one observation adds, in standard deviations. */
    static final double CLIP = 3;
    /** The default allowance per observation, in standard deviations. */
    static final double K = 0.5;
    /** The default decision threshold of the sum, in standard deviations. */
    static final double H = 8;

    private final double k;
    private final double h;
    private double mean;
    private double var;
    private int seen;
    private double sum;
    private long lastZero;
    private long lastChange = Long.MIN_VALUE;

    /** A detector with {@link #K} and {@link #H}. */
    ChangeDetector() {
        this(K, H);
    }

    /** A detector with allowance {@code k} and threshold {@code h} (standard deviations). */
    ChangeDetector(double k, double h) {
        this.k = k;
        this.h = h;
    }

    /**
     * Takes the loss of {@code iteration} (increasing from call to call) and says whether a change is detected now;
     * {@link #lastChange()} then dates it. Non-finite losses are ignored.
     */
    boolean observe(long iteration, double loss) {
        if (!Double.isFinite(loss)) {
            return false;
        }
        if (seen < WARM) {
            // the plain mean and variance of the first observations start the baseline
            seen++;
            double d = loss - mean;
            mean += d / seen;
            var += (d * (loss - mean) - var) / seen;
            lastZero = iteration;
            return false;
        }
        double sd = Math.sqrt(Math.max(var, 1e-12 + 1e-6 * mean * mean));
        sum = Math.max(0, sum + Math.min(CLIP, (loss - mean) / sd) - k);
        if (sum == 0) {
            lastZero = iteration;
        }
        if (sum > h) {
            lastChange = lastZero + 1;
            sum = 0;
            seen = 0;
            mean = 0;
            var = 0;
            return true;
        }
        double d = loss - mean;
        mean += SMOOTHING * d;
        var = (1 - SMOOTHING) * (var + SMOOTHING * d * d);
        return false;
    }

    /** The first iteration of the latest detected change, or {@link Long#MIN_VALUE} before any. */
    long lastChange() {
        return lastChange;
    }
}
