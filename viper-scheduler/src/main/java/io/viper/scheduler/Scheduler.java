package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import java.util.Locale;

/**
 * Computes checkpoint schedules over a {@link ScheduleInput}: {@code fixed}, {@code adaptive},
 * {@code optimal} and {@code epoch}. Every returned {@link Schedule} carries the CIL computed by
 * {@link CilSimulator#cil(long[])}, and every schedule is deterministic.
 *
 * <h2>fixed</h2>
 * Checkpoints at {@code s+v, s+2v, ...} up to e, for the interval v in {@code 1..e-s} with the lowest
 * CIL (ties: the smaller v), among the v giving at most {@code maxCheckpoints} checkpoints. Each v is
 * evaluated directly and the evaluation stops once the N requests are used up, so the search costs
 * at most {@code sum_v (e-s)/v = O((e-s) log(e-s))}.
 *
 * <h2>adaptive</h2>
 * Viper's greedy rule: walking {@code i = s+1..e}, checkpoint at i when {@code L(last) - L(i)}
 * exceeds the threshold, where {@code last} is the previous checkpoint (initially s); the threshold
 * is the mean plus one (population) standard deviation of consecutive warm-up loss drops
 * ({@link #adaptiveThreshold(double[])}). At most {@code maxCheckpoints} are taken.
 *
 * <h2>optimal</h2>
 * The exact minimum CIL over all checkpoint sets of at most {@code K = maxCheckpoints} iterations in
 * {@code s+1..e}, by dynamic programming. Write positions as {@code j = c - s} and let
 * {@code T(k, j) = (j * t_train + k * t_s + t_load) / t_infer} be the requests served up to a k-th
 * checkpoint at j ({@code T(0, 0) = 0}). A checkpoint whose T reaches N serves nothing and can be
 * dropped without changing the CIL, so an optimal set exists with every {@code T(k, c_k - s) < N}; for such
 * sets no request cap is active and
 * <pre>
 * CIL = sum_{k=1..K} L_{j_{k-1}} * (T(k, j_k) - T(k-1, j_{k-1})) + L_{j_K} * (N - T(K, j_K)).
 * </pre>
 * With {@code F(0, 0) = 0} the recurrence, over {@code j} with {@code T(k, j) < N}, is
 * <pre>
 * F(k, j) = min_{j' < j} [ L_{j'} * T(k, j) + (F(k-1, j') - L_{j'} * T(k-1, j')) ]
 * answer  = min_{k <= K, j} F(k, j) + L_j * (N - T(k, j))      (k = 0: L_0 * N)
 * </pre>
 * For fixed k the inner minimum is the lower envelope of lines with slope {@code L_{j'}} and
 * intercept {@code F(k-1, j') - L_{j'} T(k-1, j')}, queried at increasing {@code x = T(k, j)}: when the
 * losses never increase, a monotone convex-hull trick answers each query in amortised O(1), and
 * otherwise a Li Chao tree in O(log(e-s)), for {@code O(K (e-s))} or {@code O(K (e-s) log(e-s))} in all.
 * Among equal CILs the fewest checkpoints win. The reported CIL is recomputed by the simulator.
 *
 * <h2>epoch</h2>
 * A checkpoint at every multiple of {@code epochIters} in {@code s+1..e}: the usual baseline.
 */
public final class Scheduler {
    /** The default cap on checkpoints for fixed, adaptive and optimal. */
    public static final int DEFAULT_MAX_CHECKPOINTS = 200;
    /** The largest {@code (e - s) * maxCheckpoints} the optimal dynamic program accepts (memory). */
    public static final long MAX_OPTIMAL_CELLS = 400_000_000L;

    /** The schedule algorithms. */
    public enum Algorithm {
        /** The best single interval. */
        FIXED,
        /** Viper's greedy loss-drop rule. */
        ADAPTIVE,
        /** The exact minimum CIL under a checkpoint cap. */
        OPTIMAL,
        /** Every {@code epochIters} iterations. */
        EPOCH;

        /** The lower-case name used on the command line and in JSON. */
        public String displayName() {
            return name().toLowerCase(Locale.ROOT);
        }

        /**
         * The algorithm named {@code name}, ignoring case.
         *
         * @throws ViperConfigException for an unknown name
         */
        public static Algorithm parse(String name) {
            for (Algorithm a : values()) {
                if (a.displayName().equalsIgnoreCase(name == null ? "" : name.strip())) {
                    return a;
                }
            }
            throw new ViperConfigException("unknown algorithm '" + name + "'; known: fixed, adaptive, optimal, epoch");
        }
    }

    private final CilSimulator sim;
    private final ScheduleInput in;
    private final double[] loss;

    /** Builds the simulator for {@code input} (evaluates the curve once). */
    public Scheduler(ScheduleInput input) {
        this(new CilSimulator(input));
    }

    /** Uses an existing simulator. */
    public Scheduler(CilSimulator simulator) {
        this.sim = simulator;
        this.in = simulator.input();
        this.loss = simulator.lossesUnsafe();
    }

    /** The simulator used for every CIL. */
    public CilSimulator simulator() {
        return sim;
    }

    /**
     * The threshold of the adaptive rule: mean plus one population standard deviation of the
     * consecutive drops {@code losses[i-1] - losses[i]}.
     *
     * @throws ViperConfigException with fewer than two losses or a non-finite one
     */
    public static double adaptiveThreshold(double[] warmupLosses) {
        if (warmupLosses == null || warmupLosses.length < 2) {
            throw new ViperConfigException("adaptive: need at least 2 warm-up losses for the drop threshold, got "
                    + (warmupLosses == null ? 0 : warmupLosses.length));
        }
        int n = warmupLosses.length - 1;
        double mean = 0;
        for (int i = 1; i <= n; i++) {
            if (!Double.isFinite(warmupLosses[i]) || !Double.isFinite(warmupLosses[i - 1])) {
                throw new ViperConfigException("adaptive: warm-up loss " + (i + 1) + " is not finite");
            }
            mean += warmupLosses[i - 1] - warmupLosses[i];
        }
        mean /= n;
        double var = 0;
        for (int i = 1; i <= n; i++) {
            double d = warmupLosses[i - 1] - warmupLosses[i] - mean;
            var += d * d;
        }
        return mean + Math.sqrt(var / n);
    }

    /**
     * The adaptive threshold from the curve itself over iterations {@code 1..s} (used when no
     * observed losses exist).
     *
     * @throws ViperConfigException if s &lt; 2 or the curve is not finite there
     */
    public double curveThreshold() {
        long s = in.warmup();
        if (s < 2) {
            throw new ViperConfigException("adaptive: the warm-up end must be at least 2 to take the curve's drops, got " + s);
        }
        if (s > ScheduleInput.MAX_SPAN) {
            throw new ViperConfigException("adaptive: warm-up end " + s + " is too long to sample the curve");
        }
        double[] l = new double[(int) s];
        for (int i = 0; i < s; i++) {
            l[i] = in.curve().value(i + 1);
        }
        return adaptiveThreshold(l);
    }

    /** The best fixed interval with at most {@code maxCheckpoints} checkpoints (see the class comment). */
    public Schedule fixed(int maxCheckpoints) {
        checkCap(maxCheckpoints);
        int m = in.span();
        int bestV = -1;
        double best = Double.POSITIVE_INFINITY;
        for (int v = 1; v <= m; v++) {
            if (m / v > maxCheckpoints) {
                continue;
            }
            double c = sim.cilEvery(v);
            if (c < best) {
                best = c;
                bestV = v;
            }
        }
        return every("fixed", bestV, "every " + bestV + " iterations");
    }

    /** Viper's greedy rule with the given drop threshold, at most {@code maxCheckpoints} checkpoints. */
    public Schedule adaptive(double threshold, int maxCheckpoints) {
        checkCap(maxCheckpoints);
        if (Double.isNaN(threshold)) {
            throw new ViperConfigException("adaptive: threshold must be a number");
        }
        int m = in.span();
        long[] out = new long[Math.min(m, maxCheckpoints)];
        int k = 0;
        int last = 0;
        for (int j = 1; j <= m && k < out.length; j++) {
            if (loss[last] - loss[j] > threshold) {
                out[k++] = in.warmup() + j;
                last = j;
            }
        }
        return sim.schedule("adaptive", Arrays.copyOf(out, k),
                String.format(Locale.ROOT, "loss drop > %.4g", threshold));
    }

    /** A checkpoint at every multiple of {@code epochIters} in {@code s+1..e}. */
    public Schedule epoch(long epochIters) {
        if (epochIters <= 0) {
            throw new ViperConfigException("epoch: epoch-iters must be positive, got " + epochIters);
        }
        long first = (in.warmup() / epochIters + 1) * epochIters;
        int count = first > in.end() ? 0 : (int) ((in.end() - first) / epochIters + 1);
        long[] out = new long[count];
        for (int i = 0; i < count; i++) {
            out[i] = first + i * epochIters;
        }
        return sim.schedule("epoch", out, "every " + epochIters + " iterations");
    }

    /**
     * The minimum-CIL schedule with at most {@code maxCheckpoints} checkpoints (see the class comment).
     *
     * @throws ViperConfigException if {@code (e-s) * maxCheckpoints} exceeds {@link #MAX_OPTIMAL_CELLS}
     */
    public Schedule optimal(int maxCheckpoints) {
        checkCap(maxCheckpoints);
        int m = in.span();
        int kMax = Math.min(maxCheckpoints, m);
        if ((long) kMax * (m + 1) > MAX_OPTIMAL_CELLS) {
            throw new ViperConfigException("optimal: (e - s) * max-checkpoints = " + (long) kMax * (m + 1)
                    + " exceeds " + MAX_OPTIMAL_CELLS + "; lower --max-checkpoints");
        }
        double n = in.inferences();
        double tInfer = in.tInfer();
        // T(k, j) = a[j] + base(k): the requests served up to a k-th checkpoint at position j
        double[] a = new double[m + 1];
        for (int j = 0; j <= m; j++) {
            a[j] = j * in.tTrain() / tInfer;
        }
        boolean nonIncreasing = true;
        for (int j = 1; j <= m && nonIncreasing; j++) {
            nonIncreasing = loss[j] <= loss[j - 1];
        }

        double[] prevF = new double[m + 1];
        double[] curF = new double[m + 1];
        Arrays.fill(prevF, Double.POSITIVE_INFINITY);
        prevF[0] = 0.0;
        int[][] from = new int[kMax + 1][];
        // the hull of the current layer: line slopes, intercepts, positions
        double[] hs = new double[m + 1];
        double[] hb = new double[m + 1];
        int[] hid = new int[m + 1];
        LiChao tree = nonIncreasing ? null : new LiChao(m + 1, a, loss);
        // best[0] = lowest total so far, best[1] = its k, best[2] = its j
        double[] best = {loss[0] * n, 0, 0};
        for (int k = 1; k <= kMax; k++) {
            int[] arg = new int[m + 1];
            from[k] = arg;
            Arrays.fill(curF, Double.POSITIVE_INFINITY);
            double base = (k * in.tSave() + in.tLoad()) / tInfer;
            double basePrev = k == 1 ? 0.0 : ((k - 1) * in.tSave() + in.tLoad()) / tInfer;
            boolean any = tree == null
                    ? layerHull(k, m, n, a, base, basePrev, prevF, curF, arg, hs, hb, hid, best)
                    : layerLiChao(k, m, n, a, base, basePrev, prevF, curF, arg, tree, best);
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
        return sim.schedule("optimal", out, "at most " + maxCheckpoints + " checkpoints");
    }

    /**
     * One layer of the dynamic program with the monotone convex-hull trick (losses never increase,
     * so lines arrive with non-increasing slopes and queries with increasing x). For k = 1 the only
     * predecessor is position 0 with T = 0 ({@code basePrev} is then 0 and {@code a[0]} is 0).
     */
    private boolean layerHull(int k, int m, double n, double[] a, double base, double basePrev, double[] prevF,
            double[] curF, int[] arg, double[] hs, double[] hb, int[] hid, double[] best) {
        double[] loss = this.loss;
        int size = 0;
        int head = 0;
        boolean any = false;
        double bestCost = best[0];
        for (int j = k; j <= m; j++) {
            int jp = j - 1;
            double f = prevF[jp];
            if (f < Double.POSITIVE_INFINITY) {
                double slope = loss[jp];
                double icpt = f - slope * (a[jp] + basePrev);
                boolean keep = true;
                if (size > 0 && hs[size - 1] == slope) {
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
                        if ((icpt - b1) * (m1 - hs[size - 1]) <= (hb[size - 1] - b1) * (m1 - slope)) {
                            size--;
                        } else {
                            break;
                        }
                    }
                    hs[size] = slope;
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
            double val = hs[head] * x + hb[head];
            arg[j] = hid[head];
            curF[j] = val;
            any = true;
            double total = val + loss[j] * (n - x);
            if (total < bestCost) {
                bestCost = total;
                best[0] = total;
                best[1] = k;
                best[2] = j;
            }
        }
        return any;
    }

    /** One layer of the dynamic program with a Li Chao tree (losses in any order). */
    private boolean layerLiChao(int k, int m, double n, double[] a, double base, double basePrev, double[] prevF,
            double[] curF, int[] arg, LiChao tree, double[] best) {
        tree.reset(k, m, base);
        boolean any = false;
        for (int j = k; j <= m; j++) {
            int jp = j - 1;
            double f = prevF[jp];
            if (f < Double.POSITIVE_INFINITY) {
                tree.add(jp, f - loss[jp] * (a[jp] + basePrev));
            }
            double x = a[j] + base;
            if (!(x < n)) {
                break;
            }
            int line = tree.argmin(j, x);
            if (line < 0) {
                continue;
            }
            double val = loss[line] * x + tree.intercept(line);
            arg[j] = line;
            curF[j] = val;
            any = true;
            double total = val + loss[j] * (n - x);
            if (total < best[0]) {
                best[0] = total;
                best[1] = k;
                best[2] = j;
            }
        }
        return any;
    }

    private Schedule every(String name, int v, String detail) {
        int count = in.span() / v;
        long[] out = new long[count];
        for (int i = 0; i < count; i++) {
            out[i] = in.warmup() + (long) (i + 1) * v;
        }
        return sim.schedule(name, out, detail);
    }

    private static void checkCap(int maxCheckpoints) {
        if (maxCheckpoints < 1) {
            throw new ViperConfigException("max-checkpoints must be at least 1, got " + maxCheckpoints);
        }
    }

    /**
     * Li Chao tree over the positions {@code k..m} of one layer, whose coordinate is
     * {@code x(pos) = a[pos] + base}; a line is identified by its position {@code id}, with slope
     * {@code loss[id]} and an intercept set on insertion. Accepts lines in any slope order.
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
