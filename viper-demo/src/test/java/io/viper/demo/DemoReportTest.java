package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.demo.internal.DemoEvents.ConsumerResult;
import io.viper.demo.internal.DemoEvents.ProducerResult;
import io.viper.demo.internal.DemoEvents.Update;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The outcome of a run built from the processes' results, the verdict, the table and the JSON. */
class DemoReportTest {
    static final DemoSettings SETTINGS = DemoSettings.of(
            List.of(DemoPolicy.EPOCH, DemoPolicy.FIXED, DemoPolicy.HINDSIGHT),
            200,
            20,
            5_000_000,
            100,
            DemoTransport.TCP,
            "embedded://127.0.0.1:0",
            1);
    static final DemoPlan PLAN = DemoPlan.of(SETTINGS);
    static final ProducerResult PRODUCER = new ProducerResult(
            2, new long[] {30, 40}, new long[] {2, 3}, 0.5, new double[] {0.2, 0.3}, 1, Double.NaN, new long[0]);

    static PolicyOutcome outcome(DemoPolicy policy, double... cils) {
        ConsumerResult consumer = new ConsumerResult(
                4,
                cils,
                3 * cils.length,
                new double[] {1, 1, 1, 1},
                new long[] {1, 1, 2, 3},
                List.of(new Update(1, 9, "tcp"), new Update(2, 2, "tcp"), new Update(3, 4, "tcp")));
        return PolicyOutcome.of(
                policy,
                PLAN.schedules().getOrDefault(policy, PLAN.schedules().get(DemoPolicy.FIXED)),
                7.5,
                0.001,
                PRODUCER,
                consumer,
                1);
    }

    @Test
    void cilsAreMeansOverReplicasAndComparisonsArePairedByReplica() {
        PolicyOutcome epoch = outcome(DemoPolicy.EPOCH, 4.0, 6.0);
        PolicyOutcome fixed = outcome(DemoPolicy.FIXED, 3.0, 4.5);
        assertEquals(5.0, epoch.cil(), 1e-12);
        assertEquals(Math.sqrt(2), epoch.cilSpread(), 1e-12);
        assertEquals(0.75, epoch.accuracy());
        assertEquals(2, epoch.swaps());
        assertEquals(3.0, epoch.updateMsMean());
        assertEquals(4.0, epoch.updateMsP90());
        assertEquals("tcp", epoch.path());
        // 3/4 - 1 and 4.5/6 - 1: both -25%, no spread: a real difference
        assertArrayEquals(new double[] {-0.25, 0}, fixed.relativeTo(epoch), 1e-12);
        assertEquals(
                "winner: fixed with CIL 3.75, 25.0% less loss than epoch (5.00)",
                DemoReport.verdict(List.of(epoch, fixed)));
        // a difference that flips sign between replicas is noise
        PolicyOutcome noisy = outcome(DemoPolicy.FIXED, 3.9, 6.2);
        assertTrue(
                DemoReport.verdict(List.of(epoch, noisy)).endsWith("within request noise"),
                DemoReport.verdict(List.of(epoch, noisy)));
        assertTrue(DemoReport.relative(noisy, epoch).endsWith("(noise)"), DemoReport.relative(noisy, epoch));
        assertEquals(
                "winner: none (only hindsight was run)",
                DemoReport.verdict(List.of(outcome(DemoPolicy.HINDSIGHT, 1, 1))));
    }

    @Test
    void tableAndJsonShowEveryPolicyAgainstHindsight() throws Exception {
        DemoResult r = new DemoResult(
                SETTINGS,
                PLAN,
                List.of(
                        outcome(DemoPolicy.EPOCH, 4.0, 4.4),
                        outcome(DemoPolicy.FIXED, 3.0, 3.3),
                        outcome(DemoPolicy.HINDSIGHT, 2.0, 2.2)),
                2.0,
                Optional.empty());
        StringWriter table = new StringWriter();
        DemoReport.table(new PrintWriter(table, true), r);
        List<String> lines = table.toString().lines().toList();
        assertTrue(
                lines.stream()
                        .anyMatch(l -> l.startsWith("policy    checkpoints   CIL (mean +- sd)           vs hindsight")),
                table.toString());
        assertTrue(
                lines.stream()
                        .anyMatch(l -> l.matches("epoch +2 +4\\.20 \\+- 0\\.28 +\\+100\\.0% \\+- 0\\.0 +7\\.50 +75\\.0%"
                                + " +3\\.00 +0\\.50  tcp")),
                table.toString());
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("hindsight ") && l.contains(" - ")), table.toString());
        assertTrue(
                lines.stream()
                        .anyMatch(l -> l.startsWith("budget     " + PLAN.budget() + " checkpoints for every policy")),
                table.toString());
        assertTrue(
                lines.stream().anyMatch(l -> l.startsWith("verdict") || l.startsWith("winner: fixed")),
                table.toString());
        JsonNode j = new ObjectMapper().readTree(DemoReport.json(r));
        JsonNode fixed = j.path("policies").get(1);
        assertEquals("fixed", fixed.path("name").asText());
        assertEquals(3.15, fixed.path("cil").asDouble(), 1e-12);
        assertEquals(2, fixed.path("cils").size());
        assertEquals(0.5, fixed.path("vs_hindsight").path("mean").asDouble(), 1e-12);
        assertEquals(0.5, fixed.path("stall_ms").asDouble());
        assertEquals(2, fixed.path("published").size());
        assertEquals("tcp", j.path("run").path("transport").asText());
        assertEquals("stages", j.path("run").path("workload").asText());
        assertEquals(PLAN.budget(), j.path("run").path("budget").asInt());
        assertEquals(
                PLAN.epochIters(), j.path("predictor").path("epoch_iterations").asLong());
        assertTrue(j.path("verdict").asText().startsWith("winner: fixed"));
        assertTrue(j.path("policies").get(2).path("vs_hindsight").isMissingNode());
    }
}
