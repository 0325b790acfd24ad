package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.LossCurve;
import io.viper.predictor.StalenessModel;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** {@code optimal} under the staleness-aware objective, its preference for even spacing, and its memory limit. */
class OptimalAlgorithmTest {

    @Test
    void exactOptimumEqualsBruteForceUnderTheStalenessAwareObjective() {
        Random r = new Random(21);
        for (int t = 0; t < 100; t++) {
            int span = 1 + r.nextInt(11);
            ScheduleInput in = CheckpointPlannerTest.randomInput(r, CheckpointPlannerTest.randomCurve(r, t), span)
                    .withStaleness(new StalenessModel(r.nextDouble() * 0.3));
            CilSimulator sim = new CilSimulator(in);
            for (int cap : new int[] {1, 2, span}) {
                double brute = CheckpointPlannerTest.bruteForce(sim, cap);
                Schedule exact = new OptimalAlgorithm(cap, 0).schedule(sim);
                assertEquals(brute, exact.cil(), 1e-9 * Math.max(1, Math.abs(brute)), "case " + t + " cap " + cap);
                // with the default tolerance it stays within that share of the no-checkpoint CIL
                Schedule even = new OptimalAlgorithm(cap).schedule(sim);
                double slack = OptimalAlgorithm.DEFAULT_TOLERANCE * Math.abs(sim.cil(new long[0]) - sim.driftCost());
                assertTrue(
                        even.cil() <= brute + slack + 1e-9 * Math.abs(brute),
                        "case " + t + " cap " + cap + ": " + even.cil() + " vs " + brute);
                assertTrue(even.count() <= cap);
            }
        }
    }

    @Test
    void aTinyChangeInACostDoesNotSwapThePlan() {
        // the demo's situation: a curve that has flattened, where many schedules are within a hair of each other
        LossCurve curve = CurveFamily.EXPD3.curve(2.48, 0.0353, 0.1206);
        Set<String> plans = new HashSet<>();
        for (int i = 0; i <= 20; i++) {
            double tLoad = 0.001 * (1 + 1e-4 * i);
            ScheduleInput in =
                    new ScheduleInput(curve, 200, 2000, 3600, 0.005, 0.0005, tLoad, 0.0025, new StalenessModel(1e-4));
            plans.add(Arrays.toString(
                    new OptimalAlgorithm(45).schedule(new CilSimulator(in)).checkpoints()));
        }
        assertEquals(1, plans.size(), plans.toString());
    }

    @Test
    void evenSpacingWinsWhenEveryScheduleCostsTheSame() {
        // a flat curve without drift: every schedule has the same CIL; the plan is the fewest checkpoints
        ScheduleInput flat = new ScheduleInput(CurveFamily.LIN2.curve(0, 1), 0, 100, 1000, 1, 0, 0, 0.1);
        assertEquals(
                0, new OptimalAlgorithm(10).schedule(new CilSimulator(flat)).count());
        // a steady drift on the flat curve: a version costs more the longer it serves, so the optimum spaces evenly
        ScheduleInput drift = flat.withStaleness(new StalenessModel(0.01));
        long[] c = new OptimalAlgorithm(4).schedule(new CilSimulator(drift)).checkpoints();
        assertEquals(4, c.length);
        for (int i = 1; i < c.length; i++) {
            assertTrue(Math.abs(c[i] - c[i - 1] - 20) <= 1, Arrays.toString(c));
        }
    }

    @Test
    void aPlanThatWouldNotFitInMemoryIsRefusedInOneLine() {
        ScheduleInput in =
                new ScheduleInput(CurveFamily.EXP3.curve(2, 1e-4, 0.1), 0, 100_000, 1e6, 0.01, 0.001, 0.01, 0.001);
        ViperConfigException e = assertThrows(
                ViperConfigException.class, () -> new OptimalAlgorithm(3999).schedule(new CilSimulator(in)));
        assertTrue(
                e.getMessage().startsWith("optimal: (e - s) x max-checkpoints = 399,903,999 back-pointers")
                        && !e.getMessage().contains("\n"),
                e.getMessage());
        assertThrows(ViperConfigException.class, () -> new OptimalAlgorithm(10, -1));
    }
}
