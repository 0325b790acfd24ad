package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import java.util.Random;
import org.junit.jupiter.api.Test;

class HindsightPlannerTest {
    /** Random interval costs over {@code c} candidates at iterations 10, 20, ...; a version gets worse with age. */
    static HindsightPlanner.ServingCosts random(Random r, int c) {
        double[][] cost = new double[c + 2][c + 2];
        for (int a = 0; a <= c; a++) {
            double level = 1 + r.nextDouble();
            for (int b = a + 1; b <= c + 1; b++) {
                cost[a][b] = cost[a][b - 1] + level * (1 + 0.3 * (b - a)) * r.nextDouble();
            }
        }
        return new HindsightPlanner.ServingCosts() {
            @Override
            public int candidates() {
                return c;
            }

            @Override
            public long iteration(int i) {
                return 10L * i;
            }

            @Override
            public double cost(int from, int to) {
                assertTrue(from >= 0 && from < to && to <= c + 1, from + " -> " + to);
                return cost[from][to];
            }
        };
    }

    /** Every subset of at most k candidates, each version spanning at most g positions. */
    static double bruteForce(HindsightPlanner.ServingCosts costs, int k, int g) {
        int c = costs.candidates();
        double best = Double.POSITIVE_INFINITY;
        for (int mask = 0; mask < (1 << c); mask++) {
            if (Integer.bitCount(mask) > k) {
                continue;
            }
            double total = 0;
            int prev = 0;
            boolean ok = true;
            for (int i = 1; i <= c + 1 && ok; i++) {
                if (i == c + 1 || (mask & (1 << (i - 1))) != 0) {
                    ok = i - prev <= g;
                    total += ok ? costs.cost(prev, i) : 0;
                    prev = i;
                }
            }
            if (ok) {
                best = Math.min(best, total);
            }
        }
        return best;
    }

    @Test
    void equalsBruteForceOnSmallCases() {
        Random r = new Random(13);
        for (int t = 0; t < 300; t++) {
            int c = r.nextInt(11);
            HindsightPlanner.ServingCosts costs = random(r, c);
            int k = r.nextInt(c + 2);
            int g = 1 + r.nextInt(c + 1);
            if ((long) g * (k + 1) < c + 1) {
                assertThrows(ViperConfigException.class, () -> HindsightPlanner.plan(costs, k, g));
                continue;
            }
            HindsightPlanner.Result res = HindsightPlanner.plan(costs, k, g);
            assertEquals(bruteForce(costs, k, g), res.cost(), 1e-9, "case " + t + " c=" + c + " k=" + k + " g=" + g);
            assertTrue(res.checkpoints().length <= k);
            // the reported cost is the schedule's own
            double own = 0;
            int prev = 0;
            for (long it : res.checkpoints()) {
                own += costs.cost(prev, (int) (it / 10));
                prev = (int) (it / 10);
            }
            assertEquals(own + costs.cost(prev, c + 1), res.cost(), 1e-9);
        }
    }

    @Test
    void theFewestCheckpointsWinATie() {
        HindsightPlanner.ServingCosts flat = new HindsightPlanner.ServingCosts() {
            @Override
            public int candidates() {
                return 5;
            }

            @Override
            public long iteration(int i) {
                return i;
            }

            @Override
            public double cost(int from, int to) {
                return to - from;
            }
        };
        HindsightPlanner.Result res = HindsightPlanner.plan(flat, 3, 6);
        assertArrayEquals(new long[0], res.checkpoints());
        assertEquals(6.0, res.cost(), 0.0);
        String m = assertThrows(ViperConfigException.class, () -> HindsightPlanner.plan(flat, 1, 2))
                .getMessage();
        assertTrue(m.contains("cannot reach the end") && !m.contains("\n"), m);
    }
}
