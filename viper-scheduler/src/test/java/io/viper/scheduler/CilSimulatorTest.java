package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.LossCurve;
import io.viper.predictor.StalenessModel;
import java.util.Random;
import org.junit.jupiter.api.Test;

class CilSimulatorTest {

    // L(i) = 100 - i: easy to compute by hand
    static final ScheduleInput IN = new ScheduleInput(CurveFamily.LIN2.curve(-1, 100), 10, 20, 50, 1.0, 0.5, 2.0, 1.0);

    @Test
    void matchesTheDefinitionByHand() {
        CilSimulator sim = new CilSimulator(IN);
        // no checkpoint: all 50 requests with L(10) = 90
        assertEquals(50 * 90.0, sim.cil(new long[0]), 1e-12);
        // c1 = 14: n1 = (4*1 + 0.5 + 2)/1 = 6.5 with L(10)=90; c2 = 18: n2 = 4.5 with L(14)=86; rest 39 with L(18)=82
        assertEquals(6.5 * 90 + 4.5 * 86 + 39 * 82, sim.cil(new long[] {14, 18}), 1e-9);
        assertEquals(1.0, sim.overheadSeconds(2), 0);
    }

    @Test
    void stalenessAwareCilMatchesTheDefinitionByHand() {
        // rate 0.5: request r is served at iteration 10 + min(10, r) and costs L(c) + 0.5 * (that - c)
        CilSimulator sim = new CilSimulator(IN.withStaleness(new StalenessModel(0.5)));
        assertEquals(Objective.STALENESS, sim.input().objective());
        // no checkpoint: 50 * 90 + 0.5 * (integral_0^50 min(10, r) dr = 450)
        assertEquals(4725.0, sim.cil(new long[0]), 1e-9);
        // v10 serves r in [0, 6.5): ages r; v14 [6.5, 11): ages r - 4, capped at 6 from r = 10; v18 the rest at age 2
        double v10 = 6.5 * 90 + 0.5 * 6.5 * 6.5 / 2;
        double v14 = 4.5 * 86 + 0.5 * ((50 - 40) - (6.5 * 6.5 / 2 - 26) + 6);
        double v18 = 39 * 82 + 0.5 * 39 * 2;
        assertEquals(v10 + v14 + v18, sim.cil(new long[] {14, 18}), 1e-9);
        assertEquals(0.5 * 450, sim.driftCost(), 1e-12);
        assertEquals(sim.cil(new long[] {12, 14, 16, 18, 20}), sim.cilEvery(2), 1e-9);
    }

    @Test
    void stalenessAwareCilReducesToVipersWhenStaleAndFreshLossesAreEqual() {
        Random r = new Random(8);
        for (int t = 0; t < 50; t++) {
            LossCurve curve = CheckpointPlannerTest.randomCurve(r, t);
            ScheduleInput viper = CheckpointPlannerTest.randomInput(r, curve, 1 + r.nextInt(40));
            // probes where the deployed version loses exactly what the current model loses: no drift
            double[] version = new double[20];
            double[] at = new double[20];
            double[] loss = new double[20];
            for (int i = 0; i < 20; i++) {
                version[i] = viper.warmup() + i;
                at[i] = version[i] + 1 + r.nextInt(5);
                loss[i] = r.nextDouble();
            }
            StalenessModel measured = StalenessModel.fit(curve, version, at, loss, loss);
            CilSimulator plain = new CilSimulator(viper);
            CilSimulator aware = new CilSimulator(viper.withStaleness(measured));
            assertEquals(Objective.VIPER, aware.input().objective());
            for (int k = 0; k < 5; k++) {
                long[] c = r.longs(r.nextInt(6), viper.warmup() + 1, viper.end() + 1)
                        .distinct()
                        .sorted()
                        .toArray();
                assertEquals(plain.cil(c), aware.cil(c), 0.0, "case " + t);
            }
            assertEquals(new OptimalAlgorithm(5).schedule(plain), new OptimalAlgorithm(5).schedule(aware));
        }
    }

    @Test
    void capsTheIntervalThatUsesUpTheRequests() {
        ScheduleInput small = new ScheduleInput(CurveFamily.LIN2.curve(-1, 100), 10, 20, 8, 1.0, 0.5, 2.0, 1.0);
        CilSimulator sim = new CilSimulator(small);
        // n1 = 6.5 at 90, then only 1.5 of n2 = 4.5 at 86; c3 = 20 serves none
        assertEquals(6.5 * 90 + 1.5 * 86, sim.cil(new long[] {14, 18, 20}), 1e-9);
        assertEquals(6.5 * 90 + 1.5 * 86, sim.cil(new long[] {14, 18}), 1e-9);
        // the first interval alone exceeds N: everything at L(s)
        assertEquals(8 * 90.0, sim.cil(new long[] {19}), 1e-9);
    }

    @Test
    void everyMatchesExplicitCheckpoints() {
        CilSimulator sim = new CilSimulator(IN);
        for (int v = 1; v <= 10; v++) {
            long[] c = new long[10 / v];
            for (int i = 0; i < c.length; i++) {
                c[i] = 10 + (long) (i + 1) * v;
            }
            assertEquals(sim.cil(c), sim.cilEvery(v), 0.0, "v=" + v);
        }
    }

    @Test
    void validatesEveryInput() {
        var lin = CurveFamily.LIN2.curve(-1, 100);
        String[] msgs = {
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 10, 10, 5, 1, 1, 1, 1))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, -1, 10, 5, 1, 1, 1, 1))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 0, 1, 1, 1, 1))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, -1, 1, 1, 1))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, 1, -1, 1, 1))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, 1, 1, Double.NaN, 1))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, 1, 1, 1, 0))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(null, 0, 10, 5, 1, 1, 1, 1))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new CilSimulator(IN).cil(new long[] {15, 15}))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new CilSimulator(IN).cil(new long[] {10}))
                    .getMessage(),
            assertThrows(ViperConfigException.class, () -> new CilSimulator(IN).cil(new long[] {21}))
                    .getMessage(),
            assertThrows(
                            ViperConfigException.class,
                            () -> new CilSimulator(
                                    new ScheduleInput(CurveFamily.POW3.curve(1, 1, 0), 0, 10, 5, 1, 1, 1, 1)))
                    .getMessage(),
        };
        for (String m : msgs) {
            assertTrue(m != null && !m.isBlank() && !m.contains("\n"), m);
        }
        assertTrue(msgs[0].contains("end (10) must be greater than the warm-up end (10)"), msgs[0]);
        assertTrue(msgs[11].contains("not finite at iteration 0"), msgs[11]);
        // the online policy serves t_train / t_infer requests per iteration: 0 (or past a double) cannot run
        assertEquals(
                "schedule: t-train must be a positive number, got 0.0",
                assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, 0, 1, 1, 1))
                        .getMessage());
        assertTrue(assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, 1e300, 1, 1, 1e-300))
                .getMessage()
                .startsWith("schedule: t-train / t-infer (requests per training iteration) = 1.0E300 / 1.0E-300"
                        + " is beyond the range of a double"));
        // K * t_save is every schedule's overhead: at 1e308 s a checkpoint, ten of them are infinite
        assertEquals(
                "schedule: t-save (1.0E308) x 10 iterations, the overhead of a checkpoint at every one, is beyond the"
                        + " range of a double",
                assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, 1, 1e308, 1, 1))
                        .getMessage());
        new ScheduleInput(lin, 0, 10, 5, 1, 1e307, 1, 1); // 1e308 in all: still a number
    }
}
