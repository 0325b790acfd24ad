package io.viper.predictor;

import io.viper.errors.ViperConfigException;
import java.util.Locale;

/**
 * How the loss of a model version grows while it serves a stream that keeps moving: the version of iteration {@code c},
 * serving at iteration {@code t >= c}, loses
 *
 * <pre>L(c) + rate * (t - c)</pre>
 *
 * where {@code L} is the training-loss curve. With {@code rate = 0} a version's loss does not change while it serves,
 * which is Viper's assumption ({@link #NONE}).
 *
 * <p>The producer measures the rate cheaply: at some iterations t it scores the deployed version c and the current
 * model on the same sample; the gap between the two is what the curve explains, {@code L(c) - L(t)}, plus the drift,
 * {@code rate * (t - c)} ({@link #fit}).
 *
 * @param ratePerIteration the loss a serving version gains per iteration of age (at least 0)
 */
public record StalenessModel(double ratePerIteration) {
    /** No drift: a version serves with its training loss (Viper's objective). */
    public static final StalenessModel NONE = new StalenessModel(0);

    /**
     * Checks the rate.
     *
     * @throws ViperConfigException if it is negative or not a finite number
     */
    public StalenessModel {
        if (!(ratePerIteration >= 0) || !Double.isFinite(ratePerIteration)) {
            throw new ViperConfigException(
                    "staleness: the drift rate must be a non-negative number, got " + ratePerIteration);
        }
    }

    /** Whether versions gain no loss while they serve. */
    public boolean isNone() {
        return ratePerIteration == 0;
    }

    /**
     * The loss of the version of iteration {@code version} serving at iteration {@code at} (no drift before the
     * version).
     */
    public double servedLoss(LossCurve curve, double version, double at) {
        return curve.value(version) + ratePerIteration * Math.max(0, at - version);
    }

    /**
     * Fits the rate to paired measurements: at iteration {@code at[i]} the version of iteration {@code version[i]} lost
     * {@code stale[i]} and the current model {@code fresh[i]} on the same sample. The part of each gap that
     * {@code curve} explains, {@code L(version) - L(at)}, is taken out and the rest is regressed on the age {@code at -
     * version} through the origin; a negative slope (the versions lose no more than the curve says) is 0. Without a
     * measurement of positive age, {@link #NONE}.
     *
     * @throws ViperConfigException if the arrays differ in length or hold a non-finite value
     */
    public static StalenessModel fit(LossCurve curve, double[] version, double[] at, double[] stale, double[] fresh) {
        double[] r = regression(curve, version, at, stale, fresh);
        return r[1] == 0 || !(r[0] > 0) ? NONE : new StalenessModel(r[0] / r[1]);
    }

    /**
     * {@link #fit}, but never below what the measurements cannot rule out: the fitted rate or, where it is smaller, one
     * standard error of it (the residuals' spread over the root of the ages' sum of squares). A warm-up measures the
     * drift on a few versions a few dozen iterations old, on samples whose loss is noisy; the fitted rate then ranges
     * from 0 to twice the truth from seed to seed, and a plan on a rate of 0 puts its checkpoints where the curve still
     * falls (right after the warm-up) and none where the stream moves later. At least 3 measurements of positive age
     * are needed for a standard error; with fewer, {@link #fit}.
     *
     * @throws ViperConfigException as {@link #fit}
     */
    public static StalenessModel fitCautious(
            LossCurve curve, double[] version, double[] at, double[] stale, double[] fresh) {
        double[] r = regression(curve, version, at, stale, fresh);
        if (r[1] == 0) {
            return NONE;
        }
        double rate = Math.max(0, r[0] / r[1]);
        if (r[3] < 3) {
            return rate > 0 ? new StalenessModel(rate) : NONE;
        }
        // residual sum of squares of the fit through the origin: sum d^2 - sxy^2 / sxx
        double rss = Math.max(0, r[2] - r[0] * r[0] / r[1]);
        double se = Math.sqrt(rss / (r[3] - 1) / r[1]);
        double cautious = Math.max(rate, se);
        return cautious > 0 && Double.isFinite(cautious) ? new StalenessModel(cautious) : NONE;
    }

    /** {sxy, sxx, syy, n} of the drift regressed on the age through the origin, positive ages only. */
    private static double[] regression(LossCurve curve, double[] version, double[] at, double[] stale, double[] fresh) {
        int n = version.length;
        if (at.length != n || stale.length != n || fresh.length != n) {
            throw new ViperConfigException("staleness fit: the four arrays must have the same length, got " + n + ", "
                    + at.length + ", " + stale.length + " and " + fresh.length);
        }
        double sxy = 0;
        double sxx = 0;
        double syy = 0;
        int used = 0;
        for (int i = 0; i < n; i++) {
            if (!Double.isFinite(version[i])
                    || !Double.isFinite(at[i])
                    || !Double.isFinite(stale[i])
                    || !Double.isFinite(fresh[i])) {
                throw new ViperConfigException("staleness fit: measurement " + (i + 1) + " is not finite");
            }
            double age = at[i] - version[i];
            if (age <= 0) {
                continue;
            }
            double drift = stale[i] - fresh[i] - (curve.value(version[i]) - curve.value(at[i]));
            sxy += age * drift;
            sxx += age * age;
            syy += drift * drift;
            used++;
        }
        return new double[] {sxy, sxx, syy, used};
    }

    /** A one-line description, e.g. {@code drift 2.5e-04 per iteration}. */
    public String describe() {
        return isNone() ? "no drift" : String.format(Locale.ROOT, "drift %.3g per iteration", ratePerIteration);
    }
}
