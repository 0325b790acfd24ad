package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.demo.DemoPlan;
import io.viper.demo.DemoPolicy;
import io.viper.demo.DemoSettings;
import io.viper.demo.DemoTransport;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs a short {@code viper demo} (real producer and consumer processes, seven policies) and checks the invariants of
 * its JSON: every policy present, {@code none} publishes nothing, every policy but online published exactly its
 * schedule and online no more than the budget, CIL and accuracy are sane, every replica was scored, update latencies
 * exist where checkpoints were published, and the planned schedules are those the same seed plans again with the update
 * latency the run reports.
 */
class DemoIT {
    private static final String[] ARGS = {
        "demo", "--iterations", "300", "--pace", "3ms", "--rate", "300", "--seed", "7", "--transport", "tcp"
    };

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void aShortDemoKeepsTheTableInvariants(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("demo.png");
        List<String> args = new ArrayList<>(List.of(ARGS));
        args.addAll(List.of("--json", "--plot", png.toString()));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code =
                ViperMain.execute(args.toArray(String[]::new), new PrintWriter(out, true), new PrintWriter(err, true));
        assertEquals(0, code, "stderr: " + err);
        JsonNode root = new ObjectMapper().readTree(out.toString());
        JsonNode policies = root.path("policies");
        List<String> names = new ArrayList<>();
        policies.forEach(p -> names.add(p.path("name").asText()));
        assertEquals(List.of("epoch", "fixed", "adaptive", "optimal", "online", "hindsight", "none"), names);

        DemoSettings settings = DemoSettings.of(
                DemoPolicy.ALL, 300, 30, 3_000_000, 300, DemoTransport.TCP, "embedded://127.0.0.1:0", 7);
        // t_s was measured before the runs (TransferCalibration) and t_load by the runs before each: plan with the
        // figures used
        double tSave = root.path("predictor").path("t_save_s").asDouble();
        int requests = settings.requests();
        int budget = root.path("run").path("budget").asInt();
        assertEquals(DemoPlan.of(settings).budget(), budget);
        for (JsonNode p : policies) {
            String name = p.path("name").asText();
            DemoPolicy policy = DemoPolicy.parse(name);
            long[] schedule = longs(p.path("schedule"));
            long[] published = longs(p.path("published"));
            if (policy.planner().isPresent() && policy.followsItsPlan()) {
                // the same seed and the same measured costs plan the same schedule
                DemoPlan again = DemoPlan.of(settings, tSave, p.path("t_load_s").asDouble(), true);
                assertArrayEquals(
                        again.schedules().get(policy).checkpoints(),
                        schedule,
                        name + ": schedule differs from a fresh plan");
            }
            if (policy.followsItsPlan()) {
                assertArrayEquals(schedule, published, name + ": published iterations differ from the schedule");
            }
            assertTrue(
                    published.length <= Math.max(budget, policy == DemoPolicy.EPOCH ? published.length : 0),
                    name + " exceeds the budget");
            assertEquals(published.length, p.path("checkpoints").asInt(), name);
            assertEquals(requests, p.path("requests").asInt(), name);
            assertEquals(DemoSettings.DEFAULT_REPLICAS, p.path("cils").size(), name);
            double cil = p.path("cil").asDouble();
            assertTrue(cil > 0 && Double.isFinite(cil), name + ": CIL " + cil);
            double acc = p.path("accuracy").asDouble();
            assertTrue(acc >= 0 && acc <= 1, name + ": accuracy " + acc);
            assertTrue(p.path("stall_ms").asDouble() >= 0, name);
            assertEquals("tcp", p.path("path").asText(), name);
            assertTrue(p.path("predicted_cil").isNumber(), name); // may be negative on a short warm-up
            if (p.path("checkpoints").asInt() > 0) {
                assertTrue(p.path("swaps").asInt() > 0, name + ": no update reached the consumer");
                assertTrue(p.path("update_ms_mean").asDouble() >= 0, name);
                assertTrue(p.path("update_ms_p90").asDouble() >= 0, name);
            } else {
                assertTrue(p.path("update_ms_mean").isNull(), name);
                assertEquals(0.0, p.path("stall_ms").asDouble(), name);
            }
        }
        JsonNode none = policies.get(6);
        assertTrue(policies.get(0).path("vs_hindsight").path("mean").isNumber());
        assertTrue(policies.get(4).path("predicted_cil").asDouble() > 0, "online predicts its CIL from its probes");
        assertEquals(0, none.path("checkpoints").asInt());
        assertTrue(
                root.path("verdict").asText().startsWith("winner: "),
                root.path("verdict").asText());
        assertTrue(Files.size(png) > 10_000, "plot written");
    }

    private static long[] longs(JsonNode a) {
        long[] out = new long[a.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = a.get(i).asLong();
        }
        return out;
    }
}
