package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.demo.internal.DemoEvents.ConsumerResult;
import io.viper.demo.internal.DemoEvents.ProducerResult;
import io.viper.demo.internal.DemoEvents.Update;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The outcome of a run built from the processes' results, the verdict, the table and the JSON. */
class DemoReportTest {
    static final DemoSettings SETTINGS = new DemoSettings(List.of(Algorithm.EPOCH, Algorithm.FIXED), 200, 20, 5_000_000, 100,
            DemoTransport.TCP, "embedded://127.0.0.1:0", 1);
    static final DemoPlan PLAN = DemoPlan.of(SETTINGS);
    static final ProducerResult PRODUCER = new ProducerResult(2, new long[] {30, 40}, new long[] {2, 3}, 0.5, new double[] {0.2, 0.3}, 1);

    static PolicyOutcome outcome(Algorithm policy, double cil) {
        ConsumerResult consumer = new ConsumerResult(4, cil, 3, new double[] {1, 1, 1, 1}, new long[] {1, 1, 2, 3},
                List.of(new Update(1, 9, "tcp"), new Update(2, 2, "tcp"), new Update(3, 4, "tcp")));
        return PolicyOutcome.of(policy, PLAN.schedules().get(policy), PRODUCER, consumer, 1);
    }

    @Test
    void theVerdictNamesTheWinnerAgainstEpochOrSaysViperLost() {
        PolicyOutcome epoch = outcome(Algorithm.EPOCH, 4.0);
        PolicyOutcome fixed = outcome(Algorithm.FIXED, 3.0);
        assertEquals(0.75, epoch.accuracy());
        assertEquals(2, epoch.swaps());
        assertEquals(3.0, epoch.updateMsMean());
        assertEquals(4.0, epoch.updateMsP90());
        assertEquals("tcp", epoch.path());
        assertEquals("winner: fixed with CIL 3.00, 25.0% less loss than epoch (4.00) with 2 checkpoints instead of 2",
                DemoReport.verdict(List.of(epoch, fixed)));
        PolicyOutcome worse = outcome(Algorithm.FIXED, 5.0);
        assertTrue(DemoReport.verdict(List.of(epoch, worse)).contains("Viper did not beat the baseline"), DemoReport.verdict(List.of(epoch, worse)));
        assertEquals("winner: fixed with CIL 3.00 (epoch was not run)", DemoReport.verdict(List.of(fixed)));
    }

    @Test
    void tableAndJsonShowEveryPolicy() throws Exception {
        DemoResult r = new DemoResult(SETTINGS, PLAN, List.of(outcome(Algorithm.EPOCH, 4.0), outcome(Algorithm.FIXED, 3.0)), 2.0, Optional.empty());
        StringWriter table = new StringWriter();
        DemoReport.table(new PrintWriter(table, true), r);
        List<String> lines = table.toString().lines().toList();
        assertTrue(lines.contains("policy    checkpoints         CIL predicted CIL  accuracy update ms mean update ms p90  stall ms  path"), table.toString());
        assertTrue(lines.stream().anyMatch(l -> l.matches("epoch +2 +4\\.00 +[-0-9.]+ +75\\.0% +3\\.00 +4\\.00 +0\\.50  tcp")), table.toString());
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("run        iterations 21..200 at 5.00 ms each (0.9 s), 90 requests at 100/s per policy, seed 1")),
                table.toString());
        JsonNode j = new ObjectMapper().readTree(DemoReport.json(r));
        assertEquals("fixed", j.path("policies").get(1).path("name").asText());
        assertEquals(3.0, j.path("policies").get(1).path("cil").asDouble());
        assertEquals(0.5, j.path("policies").get(1).path("stall_ms").asDouble());
        assertEquals(2, j.path("policies").get(1).path("published").size());
        assertEquals("tcp", j.path("run").path("transport").asText());
        assertEquals(PLAN.epochIters(), j.path("predictor").path("epoch_iterations").asLong());
        assertTrue(j.path("verdict").asText().startsWith("winner: fixed"));
    }
}
