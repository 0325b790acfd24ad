package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.scheduler.CheckpointPlanner.Algorithm;
import io.viper.scheduler.Schedule;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The demo's plan, made without processes. */
class DemoPlanTest {
    @Test
    void theSameSeedPlansTheSameSchedules() {
        DemoSettings s = new DemoSettings(DemoSettings.ALL_POLICIES, 400, 40, 5_000_000, 200, DemoTransport.TCP, "embedded://127.0.0.1:0", 3);
        Map<Algorithm, Schedule> a = DemoPlan.of(s).schedules();
        Map<Algorithm, Schedule> b = DemoPlan.of(s).schedules();
        assertEquals(a, b);
        assertEquals(List.copyOf(a.keySet()), DemoSettings.ALL_POLICIES);
        assertEquals(List.of(Algorithm.EPOCH, Algorithm.FIXED, Algorithm.ADAPTIVE, Algorithm.OPTIMAL, Algorithm.NONE), DemoSettings.ALL_POLICIES);
        assertEquals(0, a.get(Algorithm.NONE).count());
        assertEquals(List.of(80L, 120L), List.of(a.get(Algorithm.EPOCH).checkpoints()[0], a.get(Algorithm.EPOCH).checkpoints()[1]));
        for (Schedule sch : a.values()) {
            assertTrue(sch.count() <= DemoPlan.MAX_CHECKPOINTS, sch.toString());
            for (long c : sch.checkpoints()) {
                assertTrue(c > 40 && c <= 400, sch.toString());
            }
        }
    }

    @Test
    void onlyTheAskedPoliciesArePlannedInTheirOrder() {
        DemoSettings s = new DemoSettings(List.of(Algorithm.NONE, Algorithm.FIXED), 200, 20, 5_000_000, 100, DemoTransport.FILE,
                "embedded://127.0.0.1:0", 1);
        DemoPlan plan = DemoPlan.of(s);
        assertEquals(List.of(Algorithm.NONE, Algorithm.FIXED), List.copyOf(plan.schedules().keySet()));
        assertEquals(s.requests(), plan.input().inferences(), 0.0);
        assertEquals(0.005, plan.input().tTrain(), 1e-15);
    }
}
