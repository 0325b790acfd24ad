package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFamily;
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
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 10, 10, 5, 1, 1, 1, 1)).getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, -1, 10, 5, 1, 1, 1, 1)).getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 0, 1, 1, 1, 1)).getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, -1, 1, 1, 1)).getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, 1, -1, 1, 1)).getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, 1, 1, Double.NaN, 1)).getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(lin, 0, 10, 5, 1, 1, 1, 0)).getMessage(),
            assertThrows(ViperConfigException.class, () -> new ScheduleInput(null, 0, 10, 5, 1, 1, 1, 1)).getMessage(),
            assertThrows(ViperConfigException.class, () -> new CilSimulator(IN).cil(new long[] {15, 15})).getMessage(),
            assertThrows(ViperConfigException.class, () -> new CilSimulator(IN).cil(new long[] {10})).getMessage(),
            assertThrows(ViperConfigException.class, () -> new CilSimulator(IN).cil(new long[] {21})).getMessage(),
            assertThrows(ViperConfigException.class,
                    () -> new CilSimulator(new ScheduleInput(CurveFamily.POW3.curve(1, 1, 0), 0, 10, 5, 1, 1, 1, 1))).getMessage(),
        };
        for (String m : msgs) {
            assertTrue(m != null && !m.isBlank() && !m.contains("\n"), m);
        }
        assertTrue(msgs[0].contains("end (10) must be greater than the warm-up end (10)"), msgs[0]);
        assertTrue(msgs[11].contains("not finite at iteration 0"), msgs[11]);
    }
}
