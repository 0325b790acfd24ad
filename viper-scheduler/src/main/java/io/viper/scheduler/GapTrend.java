package io.viper.scheduler;

/**
 * The rate at which the deployed version falls behind, measured over the run: a least-squares line through the origin
 * of the probed gap against the deployed version's age, {@code gap ~ rate * age}, pooled over every probe since the
 * latest {@linkplain #reset reset} (a detected change) with exponentially fading weights, and the spread of the probes
 * around it. One probe's gap is noisy (a validation batch of a few dozen requests); the gap accumulated over one
 * interval sums that noise, so that on a steady drift a threshold on it publishes at ages that scatter around the right
 * one, which serves more than evenly spaced checkpoints. Pooled over several intervals the rate is far steadier, and
 * the accumulated gap it predicts, {@code rate * age (age + 1) / 2}, crosses a threshold at the same age every time.
 *
 * <p>Not thread-safe: the training thread owns it.
 */
final class GapTrend {
    private final double fade;
    private double sumAgeGap;
    private double sumAgeAge;
    private double weight;
    private double sumSquares;
    private double sumGap2;

    /** @param halfLife after how many probes a probe weighs half as much, positive */
    GapTrend(double halfLife) {
        this.fade = Math.exp(-Math.log(2) / halfLife);
    }

    /** Adds the gap {@code gap} probed {@code age} iterations after the deployed version was published. */
    void observe(long age, double gap) {
        if (age <= 0 || !Double.isFinite(gap)) {
            return;
        }
        double r = rate();
        if (weight > 0) {
            double residual = gap - r * age;
            sumSquares = fade * sumSquares + residual * residual;
            sumGap2 = fade * sumGap2 + 1;
        }
        sumAgeGap = fade * sumAgeGap + age * gap;
        sumAgeAge = fade * sumAgeAge + (double) age * age;
        weight = fade * weight + 1;
    }

    /** Forgets every probe: the stream changed. */
    void reset() {
        sumAgeGap = 0;
        sumAgeAge = 0;
        weight = 0;
        sumSquares = 0;
        sumGap2 = 0;
    }

    /** The effective number of probes behind the rate (the sum of their weights). */
    double weight() {
        return weight;
    }

    /** The gap's growth per iteration of age, at least 0; 0 before any probe. */
    double rate() {
        return sumAgeAge > 0 ? Math.max(0, sumAgeGap / sumAgeAge) : 0;
    }

    /** The standard deviation of one probe's gap around the line, or NaN before two probes. */
    double noise() {
        return sumGap2 > 0 ? Math.sqrt(sumSquares / sumGap2) : Double.NaN;
    }
}
