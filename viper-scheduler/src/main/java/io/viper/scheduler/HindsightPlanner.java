package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;

/**
 * {@code hindsight}: the best schedule given what a run recorded, no prediction involved. The caller measures, for
 * candidate checkpoint iterations {@code c_1 < ... < c_C} (position 0 is the version serving when the run starts,
 * position {@code C + 1} the end of the run), the loss the requests would have cost if the version of position a served
 * them from its arrival until the version of position b arrives ({@link ServingCosts#cost}); this picks the positions,
 * at most K of them, whose intervals cost least in all, by dynamic programming:
 *
 * <pre>
 * F(0, 0) = 0,  F(k, b) = min_{b - G &lt;= a &lt; b} F(k-1, a) + cost(a, b),
 * answer = min_{k &lt;= K, a} F(k, a) + cost(a, C + 1)
 * </pre>
 *
 * where G ({@code maxGap}) bounds how many positions one version may span, so that the caller only has to measure
 * intervals of at most G positions; the end must be reachable within K + 1 such intervals. {@code O(K * C * G)} time
 * and {@code K * C} back-pointers. Among equal costs the fewest checkpoints win, then the earliest positions.
 *
 * <p>Stateless; any thread may call it.
 */
public final class HindsightPlanner {
    private HindsightPlanner() {}

    /** What a run recorded, as the cost of each interval a version could have served. */
    public interface ServingCosts {
        /** The number C of candidate checkpoint positions (1..C), at least 0. */
        int candidates();

        /** The iteration of candidate position {@code i}, 1..C, increasing with i. */
        long iteration(int i);

        /**
         * The loss of the requests the version of position {@code from} (0: the version serving at the start) answers
         * until the version of position {@code to} (C + 1: the end of the run) arrives; asked only for {@code 0 <= from
         * < to <= C + 1} and {@code to - from <= maxGap}.
         */
        double cost(int from, int to);
    }

    /**
     * The best schedule.
     *
     * @param checkpoints the chosen iterations, increasing
     * @param cost the summed cost of its intervals
     */
    public record Result(long[] checkpoints, double cost) {
        /** Copies the iterations. */
        public Result {
            checkpoints = checkpoints.clone();
        }

        /** A copy of the iterations. */
        @Override
        public long[] checkpoints() {
            return checkpoints.clone();
        }
    }

    /**
     * The cheapest schedule of at most {@code maxCheckpoints} positions, each version spanning at most {@code maxGap}
     * positions.
     *
     * @throws ViperConfigException if {@code maxCheckpoints} is negative, {@code maxGap} below 1, or the end cannot be
     *     reached within {@code maxCheckpoints + 1} intervals of {@code maxGap}
     */
    public static Result plan(ServingCosts costs, int maxCheckpoints, int maxGap) {
        int c = costs.candidates();
        if (maxCheckpoints < 0 || maxGap < 1) {
            throw new ViperConfigException("hindsight: need max-checkpoints >= 0 and a gap of at least 1, got "
                    + maxCheckpoints + " and " + maxGap);
        }
        if ((long) maxGap * (maxCheckpoints + 1L) < c + 1L) {
            throw new ViperConfigException("hindsight: " + (maxCheckpoints + 1) + " intervals of at most " + maxGap
                    + " of the " + c + " candidate positions cannot reach the end");
        }
        int kMax = Math.min(maxCheckpoints, c);
        double[] prev = new double[c + 1];
        double[] cur = new double[c + 1];
        Arrays.fill(prev, Double.POSITIVE_INFINITY);
        prev[0] = 0;
        int[][] from = new int[kMax + 1][];
        double best = c + 1 <= maxGap ? costs.cost(0, c + 1) : Double.POSITIVE_INFINITY;
        int bestK = 0;
        int bestA = 0;
        for (int k = 1; k <= kMax; k++) {
            int[] arg = new int[c + 1];
            from[k] = arg;
            Arrays.fill(cur, Double.POSITIVE_INFINITY);
            for (int b = k; b <= c; b++) {
                for (int a = Math.max(k - 1, b - maxGap); a < b; a++) {
                    if (prev[a] < Double.POSITIVE_INFINITY) {
                        double v = prev[a] + costs.cost(a, b);
                        if (v < cur[b]) {
                            cur[b] = v;
                            arg[b] = a;
                        }
                    }
                }
            }
            for (int a = Math.max(k, c + 1 - maxGap); a <= c; a++) {
                if (cur[a] < Double.POSITIVE_INFINITY) {
                    double v = cur[a] + costs.cost(a, c + 1);
                    if (v < best) {
                        best = v;
                        bestK = k;
                        bestA = a;
                    }
                }
            }
            double[] t = prev;
            prev = cur;
            cur = t;
        }
        if (best == Double.POSITIVE_INFINITY) {
            throw new ViperConfigException("hindsight: no schedule reaches the end (the costs are not finite)");
        }
        long[] out = new long[bestK];
        int a = bestA;
        for (int k = bestK; k >= 1; k--) {
            out[k - 1] = costs.iteration(a);
            a = from[k][a];
        }
        return new Result(out, best);
    }
}
