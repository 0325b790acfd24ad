package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import java.util.Locale;

/**
 * {@code optimal}: the minimum CIL over all checkpoint sets of at most {@code K = maxCheckpoints} iterations in
 * {@code s+1..e}, by dynamic programming over the simulator's serving losses {@code L_j} ({@link CilSimulator}: the
 * curve under Viper's objective, the curve less the drift under the staleness-aware one). Write positions as {@code j =
 * c - s} and let {@code T(k, j) = (j * t_train + k * t_s + t_load) / t_infer} be the requests served up to a k-th
 * checkpoint at j ({@code T(0, 0) = 0}). A checkpoint whose T reaches N serves nothing and can be dropped without
 * changing the CIL, so an optimal set exists with every {@code T(k, c_k - s) < N}; for such sets no request cap is
 * active and
 *
 * <pre>
 * CIL = sum_{k=1..K} L_{j_{k-1}} * (T(k, j_k) - T(k-1, j_{k-1})) + L_{j_K} * (N - T(K, j_K))   (+ the drift constant)
 * </pre>
 *
 * <p><b>Ties go to even spacing.</b> The CIL is often nearly flat in the checkpoint positions, so a change in the
 * fourth digit of a cost could move the exact optimum to a very different schedule. The program therefore minimises
 * {@code CIL + mu * (sum_k h_k^2 - m^2 / (K + 1))}, where {@code h_k} are the K + 1 gaps between s, the checkpoints and
 * e ({@code m = e - s}); the term is 0 for evenly spaced checkpoints and grows with unevenness, and {@code mu =
 * tolerance * L_0 * N / m^2} bounds it by {@code tolerance} of the no-checkpoint CIL ({@code L_0 * N}, the drift
 * constant aside). Among schedules whose CIL differs by less than that, the more even one wins; with a tolerance of 0
 * the program is exact. The recurrence, over {@code j} with {@code T(k, j) < N}, is
 *
 * <pre>
 * F(k, j) = min_{j' &lt; j} [ L_{j'} * (T(k, j) - T(k-1, j')) + mu * (j - j')^2 + F(k-1, j') ]
 * answer  = min_{k &lt;= K, j} F(k, j) + L_j * (N - T(k, j)) + mu * ((m - j)^2 - m^2 / (k + 1))   (k = 0: L_0 * N)
 * </pre>
 *
 * Since {@code T(k, j)} is linear in j for fixed k, each candidate j' is a line in {@code x = T(k, j)} (slope
 * {@code L_{j'} - 2 mu j' t_infer / t_train}), and the inner minimum is the lower envelope of those lines queried at
 * increasing x: when the serving losses never increase, a monotone convex-hull trick answers each query in amortised
 * O(1), and otherwise a Li Chao tree in O(log(e-s)), for {@code O(K (e-s))} or {@code O(K (e-s) log(e-s))} in all.
 * Among equal totals the fewest checkpoints win. The reported CIL is recomputed by the simulator.
 *
 * <p>Memory: one back-pointer per (checkpoint count, position), {@code 4 * K * (e - s)} bytes. A plan that needs more
 * than {@link #MAX_CELLS} back-pointers, or more than the heap has free, is refused with one line before anything is
 * allocated.
 */
public final class OptimalAlgorithm implements ScheduleAlgorithm {
    /** The largest {@code (e - s) * maxCheckpoints} the dynamic program accepts: 100 million back-pointers, 400 MB. */
    public static final long MAX_CELLS = 100_000_000L;
    /** The default share of the no-checkpoint CIL within which even spacing wins over a lower CIL. */
    public static final double DEFAULT_TOLERANCE = 1e-3;

    private final int maxCheckpoints;
    private final double tolerance;

    /**
     * The minimum-CIL schedule with at most {@code maxCheckpoints} checkpoints, ties within {@link #DEFAULT_TOLERANCE}
     * going to even spacing.
     *
     * @throws ViperConfigException if {@code maxCheckpoints} is below 1
     */
    public OptimalAlgorithm(int maxCheckpoints) {
        this(maxCheckpoints, DEFAULT_TOLERANCE);
    }

    /**
     * The minimum-CIL schedule with at most {@code maxCheckpoints} checkpoints, schedules within {@code tolerance} of
     * the no-checkpoint CIL counting as ties that even spacing breaks (0: exact).
     *
     * @throws ViperConfigException if {@code maxCheckpoints} is below 1 or the tolerance is negative or not finite
     */
    public OptimalAlgorithm(int maxCheckpoints, double tolerance) {
        this.maxCheckpoints = CheckpointPlanner.checkCap(maxCheckpoints);
        if (!(tolerance >= 0) || !Double.isFinite(tolerance)) {
            throw new ViperConfigException(
                    "optimal: the tie tolerance must be a non-negative number, got " + tolerance);
        }
        this.tolerance = tolerance;
    }

    @Override
    public String name() {
        return CheckpointPlanner.Algorithm.OPTIMAL.displayName();
    }

    /**
     * {@inheritDoc}
     *
     * @throws ViperConfigException if the back-pointers would not fit ({@link #MAX_CELLS} or the free heap)
     */
    @Override
    public Schedule schedule(CilSimulator sim) {
        ScheduleInput in = sim.input();
        // The program compares products of losses with request counts and of those with each other, which
        // pass a double's range for losses near 1e200 or 1e-200 where the CIL itself does not; it is linear
        // in the losses (mu too), so the schedule scaled (UnitScale) is the one unscaled wherever that fits.
        double[] serving = sim.servingLossesUnsafe();
        double[] loss = UnitScale.scaled(serving, UnitScale.shift(serving));
        int m = in.span();
        int kMax = Math.min(maxCheckpoints, m);
        checkMemory((long) kMax * (m + 1));
        double n = in.inferences();
        double tInfer = in.tInfer();
        double perIteration = in.tTrain() / tInfer;
        // T(k, j) = a[j] + base(k): the requests served up to a k-th checkpoint at position j
        double[] a = new double[m + 1];
        for (int j = 0; j <= m; j++) {
            a[j] = j * perIteration;
        }
        double mu = perIteration > 0 ? tolerance * Math.abs(loss[0] * n) / ((double) m * m) : 0;
        if (!Double.isFinite(2 * mu * m / perIteration)) {
            // requests per iteration so near 0 that the tie-break's slopes pass a double's range: exact program
            mu = 0;
        }
        // the line of candidate j' has slope L_j' - 2 mu j' / perIteration
        double[] slope = new double[m + 1];
        boolean nonIncreasing = true;
        for (int j = 0; j <= m; j++) {
            slope[j] = loss[j] - (mu == 0 ? 0 : 2 * mu * j / perIteration);
            nonIncreasing &= j == 0 || loss[j] <= loss[j - 1];
        }
        Layer layer = new Layer(m, n, a, loss, slope, mu, perIteration);

        double[] prevF = new double[m + 1];
        double[] curF = new double[m + 1];
        Arrays.fill(prevF, Double.POSITIVE_INFINITY);
        prevF[0] = 0.0;
        int[][] from = new int[kMax + 1][];
        LiChao tree = nonIncreasing ? null : new LiChao(m + 1, a, slope);
        // best[0] = lowest total so far, best[1] = its k, best[2] = its j
        double[] best = {loss[0] * n, 0, 0};
        for (int k = 1; k <= kMax; k++) {
            int[] arg = new int[m + 1];
            from[k] = arg;
            Arrays.fill(curF, Double.POSITIVE_INFINITY);
            double base = (k * in.tSave() + in.tLoad()) / tInfer;
            double basePrev = k == 1 ? 0.0 : ((k - 1) * in.tSave() + in.tLoad()) / tInfer;
            boolean any = tree == null
                    ? layer.hull(k, base, basePrev, prevF, curF, arg, best)
                    : layer.liChao(k, base, basePrev, prevF, curF, arg, tree, best);
            if (!any) {
                break;
            }
            double[] t = prevF;
            prevF = curF;
            curF = t;
        }
        int bestK = (int) best[1];
        int bestJ = (int) best[2];
        long[] out = new long[bestK];
        int j = bestJ;
        for (int k = bestK; k >= 1; k--) {
            out[k - 1] = in.warmup() + j;
            j = from[k][j];
        }
        return sim.schedule(name(), out, "at most " + maxCheckpoints + " checkpoints");
    }

    /** Refuses, in one line, a plan whose back-pointers exceed {@link #MAX_CELLS} or the free heap. */
    private static void checkMemory(long cells) {
        long bytes = 4 * cells;
        Runtime rt = Runtime.getRuntime();
        long free = rt.maxMemory() - (rt.totalMemory() - rt.freeMemory());
        if (cells > MAX_CELLS || bytes > free * 0.8) {
            throw new ViperConfigException(String.format(
                    Locale.ROOT,
                    "optimal: (e - s) x max-checkpoints = %,d back-pointers (%,d MB) do not fit (limit %,d MB, heap"
                            + " free %,d MB); "
                            + "lower --max-checkpoints or shorten the run",
                    cells,
                    bytes >> 20,
                    (4 * MAX_CELLS) >> 20,
                    free >> 20));
        }
    }

    /**
     * One layer k of the program: every line of layer k-1 is inserted as its position comes up, and position j queries
     * the envelope at {@code x = T(k, j)}. For k = 1 the only predecessor is position 0 with T = 0 ({@code basePrev} is
     * then 0 and {@code a[0]} is 0).
     */
    private static final class Layer {
        private final int m;
        private final double n;
        private final double[] a;
        private final double[] loss;
        private final double[] slope;
        private final double mu;
        private final double perIteration;
        // the hull of the current layer: line slopes, intercepts, positions (reused by every layer)
        private final double[] hs;
        private final double[] hb;
        private final int[] hid;

        Layer(int m, double n, double[] a, double[] loss, double[] slope, double mu, double perIteration) {
            this.m = m;
            this.n = n;
            this.a = a;
            this.loss = loss;
            this.slope = slope;
            this.mu = mu;
            this.perIteration = perIteration;
            hs = new double[m + 1];
            hb = new double[m + 1];
            hid = new int[m + 1];
        }

        /** The intercept of candidate jp's line in a layer with offset {@code base}. */
        double intercept(int jp, double f, double base, double basePrev) {
            double b = f - loss[jp] * (a[jp] + basePrev);
            return mu == 0 ? b : b + 2 * mu * jp * base / perIteration + mu * (double) jp * jp;
        }

        /** The total of ending with the k-th checkpoint at j, given its F, and records it when it is the best. */
        void offer(int k, int j, double f, double x, double[] best) {
            double total = f
                    + loss[j] * (n - x)
                    + (mu == 0 ? 0 : mu * ((double) (m - j) * (m - j) - (double) m * m / (k + 1)));
            // more checkpoints must do better by more than rounding
            if (total < best[0] - 1e-12 * Math.abs(best[0])) {
                best[0] = total;
                best[1] = k;
                best[2] = j;
            }
        }

        /**
         * The layer with the monotone convex-hull trick (lines arrive with non-increasing slopes, queries with
         * increasing x).
         */
        boolean hull(int k, double base, double basePrev, double[] prevF, double[] curF, int[] arg, double[] best) {
            int size = 0;
            int head = 0;
            boolean any = false;
            for (int j = k; j <= m; j++) {
                int jp = j - 1;
                double f = prevF[jp];
                if (f < Double.POSITIVE_INFINITY) {
                    double sl = slope[jp];
                    double icpt = intercept(jp, f, base, basePrev);
                    boolean keep = true;
                    if (size > 0 && hs[size - 1] == sl) {
                        if (icpt >= hb[size - 1]) {
                            keep = false;
                        } else {
                            size--;
                        }
                    }
                    if (keep) {
                        while (size >= 2) {
                            double m1 = hs[size - 2];
                            double b1 = hb[size - 2];
                            // the last line is useless if the new one overtakes the one before it no later
                            if ((icpt - b1) * (m1 - hs[size - 1]) <= (hb[size - 1] - b1) * (m1 - sl)) {
                                size--;
                            } else {
                                break;
                            }
                        }
                        hs[size] = sl;
                        hb[size] = icpt;
                        hid[size] = jp;
                        size++;
                    }
                }
                double x = a[j] + base;
                if (!(x < n)) {
                    break;
                }
                if (size == 0) {
                    continue;
                }
                if (head >= size) {
                    head = size - 1;
                }
                while (head + 1 < size && hs[head + 1] * x + hb[head + 1] <= hs[head] * x + hb[head]) {
                    head++;
                }
                double val = hs[head] * x + hb[head] + mu * (double) j * j;
                arg[j] = hid[head];
                curF[j] = val;
                any = true;
                offer(k, j, val, x, best);
            }
            return any;
        }

        /** The layer with a Li Chao tree (serving losses in any order). */
        boolean liChao(
                int k,
                double base,
                double basePrev,
                double[] prevF,
                double[] curF,
                int[] arg,
                LiChao tree,
                double[] best) {
            tree.reset(k, m, base);
            boolean any = false;
            for (int j = k; j <= m; j++) {
                int jp = j - 1;
                double f = prevF[jp];
                if (f < Double.POSITIVE_INFINITY) {
                    tree.add(jp, intercept(jp, f, base, basePrev));
                }
                double x = a[j] + base;
                if (!(x < n)) {
                    break;
                }
                int line = tree.argmin(j, x);
                if (line < 0) {
                    continue;
                }
                double val = slope[line] * x + tree.intercept(line) + mu * (double) j * j;
                arg[j] = line;
                curF[j] = val;
                any = true;
                offer(k, j, val, x, best);
            }
            return any;
        }
    }

    /**
     * Li Chao tree over the positions {@code k..m} of one layer, whose coordinate is {@code x(pos) = a[pos] + base}; a
     * line is identified by its position {@code id}, with slope {@code loss[id]} and an intercept set on insertion.
     * Accepts lines in any slope order.
     */
    private static final class LiChao {
        private final int[] tree;
        private final double[] a;
        private final double[] slope;
        private final double[] icpt;
        private int lo;
        private int hi;
        private double base;

        LiChao(int positions, double[] a, double[] slope) {
            int size = 1;
            while (size < positions) {
                size <<= 1;
            }
            tree = new int[2 * size];
            this.a = a;
            this.slope = slope;
            this.icpt = new double[positions];
        }

        void reset(int k, int m, double base) {
            this.lo = k;
            this.hi = m;
            this.base = base;
            Arrays.fill(tree, -1);
        }

        double intercept(int id) {
            return icpt[id];
        }

        private double value(int id, double x) {
            return slope[id] * x + icpt[id];
        }

        void add(int id, double intercept) {
            icpt[id] = intercept;
            int node = 1;
            int l = lo;
            int r = hi;
            int cur = id;
            while (true) {
                int have = tree[node];
                if (have < 0) {
                    tree[node] = cur;
                    return;
                }
                int mid = (l + r) >>> 1;
                double xm = a[mid] + base;
                if (value(cur, xm) < value(have, xm)) {
                    tree[node] = cur;
                    cur = have;
                }
                if (l == r) {
                    return;
                }
                double xl = a[l] + base;
                if (value(cur, xl) < value(tree[node], xl)) {
                    node = 2 * node;
                    r = mid;
                } else {
                    node = 2 * node + 1;
                    l = mid + 1;
                }
            }
        }

        /** The line minimal at position {@code pos} (coordinate {@code x}), or -1 if none. */
        int argmin(int pos, double x) {
            int node = 1;
            int l = lo;
            int r = hi;
            int best = -1;
            double bestV = Double.POSITIVE_INFINITY;
            while (node < tree.length) {
                int id = tree[node];
                if (id < 0) {
                    break;
                }
                double v = value(id, x);
                if (v < bestV || (v == bestV && id < best)) {
                    bestV = v;
                    best = id;
                }
                if (l == r) {
                    break;
                }
                int mid = (l + r) >>> 1;
                if (pos <= mid) {
                    node = 2 * node;
                    r = mid;
                } else {
                    node = 2 * node + 1;
                    l = mid + 1;
                }
            }
            return best;
        }
    }
}
