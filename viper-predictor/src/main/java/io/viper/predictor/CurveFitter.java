package io.viper.predictor;

import io.viper.errors.ViperConfigException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import smile.math.LevenbergMarquardt;
import smile.util.function.DifferentiableMultivariateFunction;

/**
 * Fits observed training losses to the candidate {@link CurveFamily families} with Smile's Levenberg-Marquardt and
 * keeps the family with the lowest error on held-back points.
 *
 * <p>Method:
 *
 * <ol>
 *   <li>Points are sorted by x; the last {@code holdoutFraction} of them (at least one; by default half) are held back,
 *       because the curve is used to extrapolate far beyond the warm-up: a family is chosen for predicting the second
 *       half from the first, which tells power laws and exponentials apart much better than a short hold-out does.
 *   <li>Noisy per-iteration losses: when there are more than {@value #MAX_FIT_POINTS} points, consecutive points are
 *       averaged into {@value #MAX_FIT_POINTS} bins before fitting (the least-squares optimum barely moves, and the fit
 *       stays fast); errors are always measured on the raw points.
 *   <li>Least squares are weighted by recency: the weight rises linearly with x from 1/11 at the first point to 1 at
 *       the last, since the curve is used to extrapolate and the first iterations of a real run are a transient that no
 *       family models well.
 *   <li>Starting points come from the data: for the exponential and power families, the rate {@code b} is scanned over
 *       a logarithmic grid and, for each {@code b}, the remaining parameters (which enter linearly) are solved by least
 *       squares; the best two grid points start Levenberg-Marquardt. {@code lin2} starts from ordinary least squares.
 *   <li>A result with a negative rate {@code b} (a growing "loss") or non-finite parameters is rejected in favour of
 *       the best valid starting point. When every loss is non-negative, the asymptote {@code c} of exp3, expd3 and pow3
 *       must be too: a fit that wants it below zero is redone with {@code c} held at 0.
 *   <li>The family with the lowest held-back RMSE wins (ties: declaration order) and is refitted on all points.
 * </ol>
 *
 * <p>Smile's LAPACK binding needs the system library {@code libopenblas.so} ({@code scripts/setup-system.sh} installs
 * it); without it {@link #fit} throws a {@link ViperConfigException} saying so. Instances are immutable and
 * thread-safe.
 */
public final class CurveFitter {
    /** Above this many points, consecutive points are averaged into this many bins before fitting. */
    public static final int MAX_FIT_POINTS = 1000;

    private static final int GRID = 30;

    private final Set<CurveFamily> families;
    private final double holdoutFraction;

    /** The default share of points held back: {@value}. */
    public static final double DEFAULT_HOLDOUT = 0.5;

    /** A fitter over all families, holding back the last half of the points ({@link #DEFAULT_HOLDOUT}). */
    public CurveFitter() {
        this(EnumSet.allOf(CurveFamily.class), DEFAULT_HOLDOUT);
    }

    /**
     * A fitter over the given families.
     *
     * @param families the candidate families (not empty)
     * @param holdoutFraction the share of points, taken from the end, held back for selection (0, 0.5]
     */
    public CurveFitter(Set<CurveFamily> families, double holdoutFraction) {
        if (families == null || families.isEmpty()) {
            throw new ViperConfigException("curve fitter: need at least one curve family");
        }
        if (!(holdoutFraction > 0 && holdoutFraction <= 0.5)) {
            throw new ViperConfigException(
                    "curve fitter: holdout fraction must be in (0, 0.5], got " + holdoutFraction);
        }
        this.families = EnumSet.copyOf(families);
        this.holdoutFraction = holdoutFraction;
    }

    /**
     * Fits {@code y} (losses) against {@code x} (iterations) and returns the best curve.
     *
     * @throws ViperConfigException if the arrays differ in length, hold fewer than 5 points or a non-finite value, or
     *     if no family could be fitted
     */
    public FitResult fit(double[] x, double[] y) {
        if (x == null || y == null || x.length != y.length) {
            throw new ViperConfigException("curve fit: x and y must have the same length, got "
                    + (x == null ? "null" : x.length) + " and " + (y == null ? "null" : y.length));
        }
        int n = x.length;
        if (n < 5) {
            throw new ViperConfigException("curve fit: need at least 5 losses, got " + n);
        }
        for (int i = 0; i < n; i++) {
            if (!Double.isFinite(x[i]) || !Double.isFinite(y[i])) {
                throw new ViperConfigException(
                        "curve fit: point " + (i + 1) + " is not finite (x=" + x[i] + ", y=" + y[i] + ")");
            }
        }
        NativeBlas.singleThreaded();
        double[][] sorted = sortByX(x, y);
        double[] xs = sorted[0];
        double[] ys = sorted[1];
        int hold = Math.max(1, (int) Math.round(n * holdoutFraction));
        int train = n - hold;
        double[] xt = Arrays.copyOf(xs, train);
        double[] yt = Arrays.copyOf(ys, train);
        double[] xh = Arrays.copyOfRange(xs, train, n);
        double[] yh = Arrays.copyOfRange(ys, train, n);
        double[][] bt = bin(xt, yt);

        List<FitResult.Candidate> candidates = new ArrayList<>();
        for (CurveFamily f : families) {
            if (f.needsPositiveX() && xs[0] <= 0) {
                candidates.add(
                        new FitResult.Candidate(f, null, Double.NaN, Double.NaN, "needs x > 0, got x = " + xs[0]));
                continue;
            }
            double[] p = fitFamily(f, bt[0], bt[1], null);
            if (p == null) {
                candidates.add(new FitResult.Candidate(f, null, Double.NaN, Double.NaN, "no finite fit"));
                continue;
            }
            LossCurve c = f.curve(p);
            candidates.add(new FitResult.Candidate(f, c, rmse(c, xt, yt), rmse(c, xh, yh), null));
        }
        candidates.sort(Comparator.comparing((FitResult.Candidate c) -> !c.ok())
                .thenComparingDouble(c -> c.ok() ? c.holdoutError() : 0.0)
                .thenComparing(FitResult.Candidate::family));
        FitResult.Candidate best = candidates.get(0);
        if (!best.ok() || !Double.isFinite(best.holdoutError())) {
            throw new ViperConfigException("curve fit: no curve family fits these " + n + " losses");
        }
        double[][] ball = bin(xs, ys);
        double[] p = fitFamily(best.family(), ball[0], ball[1], best.curve().params());
        LossCurve chosen = p == null ? best.curve() : best.family().curve(p);
        return new FitResult(chosen, rmse(chosen, xs, ys), best.holdoutError(), candidates);
    }

    /** Root-mean-square error of {@code curve} on the points. */
    public static double rmse(LossCurve curve, double[] x, double[] y) {
        double s = 0;
        for (int i = 0; i < x.length; i++) {
            double r = y[i] - curve.value(x[i]);
            s += r * r;
        }
        return Math.sqrt(s / x.length);
    }

    /** Fits one family from {@code extraStart}, or from data-derived starting points when it is null. */
    private static double[] fitFamily(CurveFamily f, double[] x, double[] y, double[] extraStart) {
        double[] w = weights(x);
        boolean floorAtZero = hasAsymptote(f) && min(y) >= 0;
        // a refit starts from the given point only; a first fit from the data-derived points
        List<double[]> starts =
                extraStart != null ? new ArrayList<>(List.of(extraStart.clone())) : startingPoints(f, x, y, w);
        double[] best = null;
        double bestSse = Double.POSITIVE_INFINITY;
        for (double[] s : starts) {
            List<double[]> tries = new ArrayList<>();
            tries.add(s);
            double[] p = levenbergMarquardt(f, x, y, w, s, false);
            if (p != null) {
                tries.add(p);
            }
            if (floorAtZero && (p == null || p[2] < 0)) {
                // losses are never negative: refit with the asymptote c held at 0
                double[] z = s.clone();
                z[2] = 0;
                if (f == CurveFamily.EXPD3) {
                    z[0] = s[0] - s[2];
                }
                double[] q = levenbergMarquardt(f, x, y, w, z, true);
                tries.add(z);
                if (q != null) {
                    tries.add(q);
                }
            }
            for (double[] t : tries) {
                if (valid(f, t) && (!floorAtZero || t[2] >= 0)) {
                    double sse = sse(f, t, x, y, w);
                    if (sse < bestSse) {
                        bestSse = sse;
                        best = t;
                    }
                }
            }
        }
        return best;
    }

    private static boolean hasAsymptote(CurveFamily f) {
        return f == CurveFamily.EXP3 || f == CurveFamily.EXPD3 || f == CurveFamily.POW3;
    }

    private static double min(double[] y) {
        double m = Double.POSITIVE_INFINITY;
        for (double v : y) {
            m = Math.min(m, v);
        }
        return m;
    }

    /**
     * Weighted least squares through Smile's unweighted solver: the i-th point is passed as the index i, and the
     * function returns {@code sqrt(w_i) * f(x_i)} against targets {@code sqrt(w_i) * y_i}.
     */
    private static double[] levenbergMarquardt(
            CurveFamily f, double[] x, double[] y, double[] wt, double[] start, boolean fixC) {
        int full = f.parameterCount();
        int d = fixC ? full - 1 : full;
        int n = x.length;
        double[] sw = new double[n];
        double[] idx = new double[n];
        double[] ty = new double[n];
        for (int i = 0; i < n; i++) {
            sw[i] = Math.sqrt(wt[i]);
            idx[i] = i;
            ty[i] = sw[i] * y[i];
        }
        double fixedC = full == 3 ? start[2] : 0;
        double[] p = new double[full];
        double[] grad = new double[full];
        DifferentiableMultivariateFunction func = new DifferentiableMultivariateFunction() {
            @Override
            public double f(double[] w) {
                int i = (int) w[d];
                System.arraycopy(w, 0, p, 0, d);
                if (fixC) {
                    p[2] = fixedC;
                }
                return sw[i] * f.value(p, x[i]);
            }

            @Override
            public double g(double[] w, double[] gradient) {
                int i = (int) w[d];
                System.arraycopy(w, 0, p, 0, d);
                if (fixC) {
                    p[2] = fixedC;
                }
                double v = f.valueAndGradient(p, x[i], grad);
                for (int j = 0; j < d; j++) {
                    gradient[j] = grad[j] * sw[i];
                }
                return sw[i] * v;
            }
        };
        double[] s0 = Arrays.copyOf(start, d);
        try {
            double[] r = LevenbergMarquardt.fit(func, idx, ty, s0, 1e-6, 60).parameters();
            if (!fixC) {
                return r;
            }
            double[] out = Arrays.copyOf(r, full);
            out[2] = fixedC;
            return out;
        } catch (LinkageError | IllegalArgumentException e) {
            if (isMissingLapack(e)) {
                throw new ViperConfigException(
                        "curve fit: Smile needs the native library libopenblas.so "
                                + "(Debian: apt-get install libopenblas-dev, or run scripts/setup-system.sh); "
                                + "or pass --curve NAME:params",
                        e);
            }
            return null;
        } catch (ArithmeticException e) {
            return null;
        }
    }

    private static boolean isMissingLapack(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof ExceptionInInitializerError
                    || t instanceof UnsatisfiedLinkError
                    || t instanceof NoClassDefFoundError) {
                return true;
            }
            String m = t.getMessage();
            if (m != null && m.contains("Cannot open library")) {
                return true;
            }
        }
        return false;
    }

    private static boolean valid(CurveFamily f, double[] p) {
        for (double v : p) {
            if (!Double.isFinite(v)) {
                return false;
            }
        }
        return f == CurveFamily.LIN2 || p[1] >= 0;
    }

    private static double sse(CurveFamily f, double[] p, double[] x, double[] y, double[] w) {
        double s = 0;
        for (int i = 0; i < x.length; i++) {
            double r = y[i] - f.value(p, x[i]);
            s += w[i] * r * r;
        }
        return Double.isFinite(s) ? s : Double.POSITIVE_INFINITY;
    }

    /**
     * Data-derived starting points: OLS for lin2; for the other families a logarithmic grid over the rate b with the
     * linear parameters solved exactly, best two kept.
     */
    static List<double[]> startingPoints(CurveFamily f, double[] x, double[] y, double[] w) {
        List<double[]> out = new ArrayList<>();
        if (f == CurveFamily.LIN2) {
            double[] ab = linearFit(x, y, w);
            out.add(new double[] {ab[0], ab[1]});
            return out;
        }
        double xmax = Math.max(Math.abs(x[x.length - 1]), 1e-12);
        double lo;
        double hi;
        if (f == CurveFamily.POW3) {
            lo = 0.01;
            hi = 5.0;
        } else {
            lo = 0.01 / xmax;
            hi = 200.0 / xmax;
        }
        double[][] top = new double[2][];
        double[] topSse = {Double.POSITIVE_INFINITY, Double.POSITIVE_INFINITY};
        double[] g = new double[x.length];
        for (int k = 0; k < GRID; k++) {
            double b = lo * Math.pow(hi / lo, k / (double) (GRID - 1));
            for (int i = 0; i < x.length; i++) {
                g[i] = f == CurveFamily.POW3 ? Math.pow(x[i], -b) : Math.exp(-b * x[i]);
            }
            double[] p;
            if (f == CurveFamily.EXP2) {
                double sgy = 0;
                double sgg = 0;
                for (int i = 0; i < x.length; i++) {
                    sgy += w[i] * g[i] * y[i];
                    sgg += w[i] * g[i] * g[i];
                }
                if (sgg == 0) {
                    continue;
                }
                p = new double[] {sgy / sgg, b};
            } else {
                double[] ac = linearFit(g, y, w);
                if (ac == null) {
                    continue;
                }
                p = f == CurveFamily.EXPD3 ? new double[] {ac[0] + ac[1], b, ac[1]} : new double[] {ac[0], b, ac[1]};
            }
            double s = sse(f, p, x, y, w);
            if (s < topSse[0]) {
                top[1] = top[0];
                topSse[1] = topSse[0];
                top[0] = p;
                topSse[0] = s;
            } else if (s < topSse[1]) {
                top[1] = p;
                topSse[1] = s;
            }
        }
        for (double[] p : top) {
            if (p != null) {
                out.add(p);
            }
        }
        return out;
    }

    /** Weighted least squares of y on (g, 1): returns {slope, intercept}, or null if g is constant. */
    private static double[] linearFit(double[] g, double[] y, double[] w) {
        int n = g.length;
        double sw = 0;
        double mg = 0;
        double my = 0;
        for (int i = 0; i < n; i++) {
            sw += w[i];
            mg += w[i] * g[i];
            my += w[i] * y[i];
        }
        mg /= sw;
        my /= sw;
        double sgg = 0;
        double sgy = 0;
        for (int i = 0; i < n; i++) {
            sgg += w[i] * (g[i] - mg) * (g[i] - mg);
            sgy += w[i] * (g[i] - mg) * (y[i] - my);
        }
        if (!(sgg > 1e-300)) {
            return null;
        }
        double slope = sgy / sgg;
        return new double[] {slope, my - slope * mg};
    }

    /**
     * Recency weights: rising linearly with x from 1/11 at the first point to 1 at the last, so that the late warm-up,
     * which the curve extrapolates from, counts more than the first transient iterations.
     */
    static double[] weights(double[] x) {
        int n = x.length;
        double lo = x[0];
        double span = x[n - 1] - lo;
        double[] w = new double[n];
        for (int i = 0; i < n; i++) {
            w[i] = span > 0 ? (x[i] - lo + span / 10) / (span * 1.1) : 1.0;
        }
        return w;
    }

    private static double[][] sortByX(double[] x, double[] y) {
        int n = x.length;
        Integer[] idx = new Integer[n];
        for (int i = 0; i < n; i++) {
            idx[i] = i;
        }
        Arrays.sort(idx, Comparator.comparingDouble(i -> x[i]));
        double[] xs = new double[n];
        double[] ys = new double[n];
        for (int i = 0; i < n; i++) {
            xs[i] = x[idx[i]];
            ys[i] = y[idx[i]];
        }
        return new double[][] {xs, ys};
    }

    /**
     * Averages consecutive points into at most {@link #MAX_FIT_POINTS} bins whose sizes grow geometrically with the
     * index: the first points, where learning curves bend most, stay (nearly) single, so averaging x and y within a bin
     * adds no visible curvature bias.
     */
    static double[][] bin(double[] x, double[] y) {
        int n = x.length;
        if (n <= MAX_FIT_POINTS) {
            return new double[][] {x, y};
        }
        double[] bx = new double[MAX_FIT_POINTS];
        double[] by = new double[MAX_FIT_POINTS];
        double ratio = Math.log(n + 1.0) / MAX_FIT_POINTS;
        int m = 0;
        int from = 0;
        for (int k = 1; k <= MAX_FIT_POINTS && from < n; k++) {
            int to = k == MAX_FIT_POINTS ? n : Math.min(n, (int) Math.floor(Math.exp(k * ratio)));
            if (to <= from) {
                continue;
            }
            double sx = 0;
            double sy = 0;
            for (int i = from; i < to; i++) {
                sx += x[i];
                sy += y[i];
            }
            bx[m] = sx / (to - from);
            by[m] = sy / (to - from);
            m++;
            from = to;
        }
        return new double[][] {Arrays.copyOf(bx, m), Arrays.copyOf(by, m)};
    }
}
