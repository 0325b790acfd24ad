package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.scheduler.Objective;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class ReplayTest {
    static DemoSettings small(DemoWorkload w) {
        return new DemoSettings(
                DemoPolicy.ALL,
                400,
                40,
                5_000_000,
                400,
                DemoTransport.TCP,
                "embedded://127.0.0.1:0",
                3,
                w,
                OptionalInt.empty(),
                Objective.STALENESS,
                2);
    }

    @Test
    void everyPolicyIsReplayedOnTheSameRequestsAndHindsightIsTheBound() {
        Replay.Result r = Replay.run(small(DemoWorkload.STAGES), 1e-4, 0.002);
        assertEquals(DemoPolicy.ALL, r.runs().stream().map(Replay.Run::policy).toList());
        Replay.Run none = r.of(DemoPolicy.NONE);
        Replay.Run hindsight = r.of(DemoPolicy.HINDSIGHT);
        assertEquals(0, none.checkpoints().length);
        for (Replay.Run run : r.runs()) {
            assertEquals(2, run.cils().length);
            assertTrue(run.cil() > 0 && run.cil() <= none.cil() * 1.0001, run.policy() + " " + run.cil());
            assertTrue(run.checkpoints().length <= r.plan().budget(), run.policy() + " over the budget");
            if (run.policy() != DemoPolicy.NONE) {
                assertTrue(run.checkpoints().length > 0, run.policy() + " never published");
                // hindsight is chosen on other replicas, so a policy may beat it by a little noise only
                assertTrue(run.cil() > 0.97 * hindsight.cil(), run.policy() + " " + run.cil() + " " + hindsight.cil());
            }
        }
        // the same seed replays the same numbers
        assertEquals(
                r.of(DemoPolicy.ONLINE).cil(),
                Replay.run(small(DemoWorkload.STAGES), 1e-4, 0.002)
                        .of(DemoPolicy.ONLINE)
                        .cil());
    }

    @Test
    void theSweepPrintsEveryPolicyRelativeToHindsight() {
        DemoSettings s = small(DemoWorkload.DRIFT);
        List<Replay.Result> results = SeedSweep.run(s, 2, 1e-4, 0.002, r -> {});
        StringWriter w = new StringWriter();
        SeedSweep.table(new PrintWriter(w, true), s, results, 0.002);
        String t = w.toString();
        assertTrue(t.startsWith("2 seeds from 3, workload drift"), t);
        for (DemoPolicy p : DemoPolicy.ALL) {
            assertEquals(p != DemoPolicy.HINDSIGHT, t.contains("\n" + p.displayName() + " "), p + ": " + t);
        }
        assertTrue(t.contains("optimal - epoch, worst seed"), t);
    }
}
