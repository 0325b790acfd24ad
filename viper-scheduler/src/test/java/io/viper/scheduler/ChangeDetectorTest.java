package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The CUSUM on synthetic loss curves whose change points are known. */
class ChangeDetectorTest {
    /**
     * A falling learning curve with 3% noise that jumps up by {@code jump} at each of {@code changes} and falls again.
     */
    static double loss(long i, long[] changes, double jump, Random r) {
        long since = i;
        int k = 0;
        for (long c : changes) {
            if (i >= c) {
                since = i - c;
                k++;
            }
        }
        double base = 0.3 + 2.0 * Math.exp(-i / 150.0);
        double bump = k == 0 ? 0 : jump * Math.exp(-since / 80.0);
        return (base + bump) * (1 + 0.03 * r.nextGaussian());
    }

    static List<Long> detect(long[] changes, double jump, long seed) {
        ChangeDetector d = new ChangeDetector();
        Random r = new Random(seed);
        List<Long> found = new ArrayList<>();
        for (long i = 1; i <= 2000; i++) {
            if (d.observe(i, loss(i, changes, jump, r))) {
                found.add(d.lastChange());
            }
        }
        return found;
    }

    @Test
    void findsEachKnownChangeWithinAFewIterationsAndNothingElse() {
        long[] changes = {500, 1000, 1500};
        for (long seed = 1; seed <= 5; seed++) {
            List<Long> found = detect(changes, 0.4, seed);
            assertEquals(changes.length, found.size(), "seed " + seed + ": " + found);
            for (int i = 0; i < changes.length; i++) {
                long at = found.get(i);
                assertTrue(
                        at >= changes[i] - 3 && at <= changes[i] + 10,
                        "seed " + seed + ": change " + changes[i] + " dated " + at);
            }
        }
    }

    @Test
    void aFallingCurveWithNoiseIsNoChange() {
        for (long seed = 1; seed <= 5; seed++) {
            assertEquals(List.of(), detect(new long[0], 0, seed), "seed " + seed);
        }
    }

    @Test
    void aSingleSpikeIsNoChangeAndNonFiniteLossesAreIgnored() {
        ChangeDetector d = new ChangeDetector();
        for (long i = 1; i <= 100; i++) {
            double l = i == 60 ? 5.0 : 1.0 + 0.01 * Math.sin((double) i);
            assertTrue(!d.observe(i, l), "iteration " + i);
            assertTrue(!d.observe(1000 + i, Double.NaN));
        }
        assertEquals(Long.MIN_VALUE, d.lastChange());
    }
}
