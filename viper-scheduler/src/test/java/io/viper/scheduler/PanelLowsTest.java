package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PanelLowsTest {
    @Test
    void aLowShowsWhenTheLossTurnsUpAfterTheLowestOfItsSpan() {
        PanelLows l = new PanelLows(3);
        for (double v : new double[] {5, 4, 3}) {
            l.observe(v);
            assertFalse(l.turnedUp(), "not before span + 2 losses");
        }
        l.observe(2);
        assertFalse(l.turnedUp(), "still falling");
        l.observe(2.5);
        assertTrue(l.turnedUp(), "2 is below the 3 before it, and the loss turned up");
        l.observe(2.4);
        assertFalse(l.turnedUp(), "falling again");
        l.observe(2.45);
        assertFalse(l.turnedUp(), "2.4 is no low: 2 is within the span before it");
        l.observe(Double.NaN); // no panel: what came before is forgotten
        l.observe(1);
        l.observe(0.5);
        l.observe(0.4);
        l.observe(0.3);
        assertFalse(l.turnedUp());
        l.observe(0.31);
        assertTrue(l.turnedUp());
        l.reset();
        l.observe(1);
        assertFalse(l.turnedUp());
    }

    /** A steady drift, and a panel on which the current model's loss wanders, lowest at 10, 30, 50 and on. */
    static final class Wandering implements StalenessProbe {
        final GapTrendTest.Drift drift;

        Wandering(long seed) {
            this.drift = new GapTrendTest.Drift(seed, 0.002, 0.1, Long.MAX_VALUE);
        }

        @Override
        public Measurement measure(long t) {
            Measurement m = drift.measure(t);
            double panel = 1 - 1e-4 * t + 0.01 * Math.cos(2 * Math.PI * t / 20);
            return new Measurement(m.deployed(), m.current(), panel);
        }
    }

    @Test
    void onASteadyDriftItPublishesTheVersionsAtALowOfTheirOwn() {
        // the rate calls for a checkpoint every 49 iterations; a quarter of that either way always holds a low (every
        // 20 iterations), seen one iteration later, when the loss turns up: the policy publishes there. Without the
        // panel it published at the rate's age, on a low about one time in 20
        for (long seed = 1; seed <= 5; seed++) {
            Wandering w = new Wandering(seed);
            OnlineCheckpointPolicy p = new OnlineCheckpointPolicy(
                    new OnlineCheckpointPolicy.Config(
                            0,
                            2000,
                            40,
                            2,
                            1,
                            2 * 0.002 * 49 * 50 / 2,
                            4,
                            OnlineCheckpointPolicy.Config.DEFAULT_GAIN,
                            100,
                            500),
                    w);
            List<Long> late = new ArrayList<>();
            for (long i = 1; i <= 2000; i++) {
                if (p.shouldPublish(i, 1)) {
                    w.drift.deployed = i;
                    if (i > 400) {
                        late.add(i);
                    }
                }
            }
            long atLows = late.stream().filter(i -> i % 20 == 11).count();
            assertTrue(late.size() >= 25, "seed " + seed + ": " + late);
            assertTrue(atLows >= 0.9 * late.size(), "seed " + seed + ": " + atLows + " at a low: " + late);
        }
    }
}
