package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;

/**
 * {@code optimal}: the exact minimum CIL over all checkpoint sets of at most {@code K = maxCheckpoints}
 * iterations in {@code s+1..e}, by dynamic programming. Write positions as {@code j = c - s} and let
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
 */
public final class OptimalAlgorithm implements ScheduleAlgorithm {
    /** The largest {@code (e - s) * maxCheckpoints} the dynamic program accepts (memory). */
    public static final long MAX_CELLS = 400_000_000L;

    private final int maxCheckpoints;

    /**
     * The minimum-CIL schedule with at most {@code maxCheckpoints} checkpoints.
     *
     * @throws ViperConfigException if {@code maxCheckpoints} is below 1
     */
    public OptimalAlgorithm(int maxCheckpoints) {
        this.maxCheckpoints = CheckpointPlanner.checkCap(maxCheckpoints);
    }

    @Override
    public String name() {
        return CheckpointPlanner.Algorithm.OPTIMAL.displayName();
    }

    /**
     * {@inheritDoc}
     *
     * @throws ViperConfigException if {@code (e-s) * maxCheckpoints} exceeds {@link #MAX_CELLS}
     */
    @Override
    public Schedule schedule(CilSimulator sim) {
        ScheduleInput in = sim.input();
        double[] loss = sim.lossesUnsafe();
        int m = in.span();
        int kMax = Math.min(maxCheckpoints, m);
        if ((long) kMax * (m + 1) > MAX_CELLS) {
            throw new ViperConfigException("optimal: (e - s) * max-checkpoints = " + (long) kMax * (m + 1)
                    + " exceeds " + MAX_CELLS + "; lower --max-checkpoints");
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
                    ? layerHull(k, m, n, a, loss, base, basePrev, prevF, curF, arg, hs, hb, hid, best)
                    : layerLiChao(k, m, n, a, loss, base, basePrev, prevF, curF, arg, tree, best);
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

    /**
     * One layer of the dynamic program with the monotone convex-hull trick (losses never increase,
     * so lines arrive with non-increasing slopes and queries with increasing x). For k = 1 the only
     * predecessor is position 0 with T = 0 ({@code basePrev} is then 0 and {@code a[0]} is 0).
     */
    private static boolean layerHull(int k, int m, double n, double[] a, double[] loss, double base, double basePrev,
            double[] prevF, double[] curF, int[] arg, double[] hs, double[] hb, int[] hid, double[] best) {
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
    private static boolean layerLiChao(int k, int m, double n, double[] a, double[] loss, double base, double basePrev,
            double[] prevF, double[] curF, int[] arg, LiChao tree, double[] best) {
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
