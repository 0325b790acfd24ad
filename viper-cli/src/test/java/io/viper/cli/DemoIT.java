package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.demo.DemoPlan;
import io.viper.demo.DemoSettings;
import io.viper.demo.DemoTransport;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import io.viper.scheduler.Schedule;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs a short {@code viper demo} (real producer and consumer processes, five policies) and checks the
 * invariants of its JSON: every policy present, {@code none} publishes nothing, every policy published
 * exactly its schedule, CIL and accuracy are sane, update latencies exist where checkpoints were
 * published, and the schedules are those the same seed plans again.
 */
class DemoIT {
    private static final String[] ARGS = {"demo", "--iterations", "300", "--pace", "3ms", "--rate", "300", "--seed", "7", "--transport", "tcp"};

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void aShortDemoKeepsTheTableInvariants(@TempDir Path dir) throws Exception {
        Path png = dir.resolve("demo.png");
        List<String> args = new ArrayList<>(List.of(ARGS));
        args.addAll(List.of("--json", "--plot", png.toString()));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = ViperMain.execute(args.toArray(String[]::new), new PrintWriter(out, true), new PrintWriter(err, true));
        assertEquals(0, code, "stderr: " + err);
        JsonNode root = new ObjectMapper().readTree(out.toString());
        JsonNode policies = root.path("policies");
        List<String> names = new ArrayList<>();
        policies.forEach(p -> names.add(p.path("name").asText()));
        assertEquals(List.of("epoch", "fixed", "adaptive", "optimal", "none"), names);

        // the same seed (and costs) plans the same schedules
        DemoSettings settings = new DemoSettings(DemoSettings.ALL_POLICIES, 300, 30, 3_000_000, 300, DemoTransport.TCP,
                "embedded://127.0.0.1:0", 7);
        // t_s and t_load were measured before the run (TransferCalibration): plan with the figures it used
        JsonNode predictor = root.path("predictor");
        Map<Algorithm, Schedule> plan = DemoPlan.of(settings, predictor.path("t_save_s").asDouble(), predictor.path("t_load_s").asDouble()).schedules();
        int requests = settings.requests();
        for (JsonNode p : policies) {
            String name = p.path("name").asText();
            long[] schedule = longs(p.path("schedule"));
            assertArrayEquals(plan.get(Algorithm.parse(name)).checkpoints(), schedule, name + ": schedule differs from a fresh plan with the same seed");
            assertArrayEquals(schedule, longs(p.path("published")), name + ": published iterations differ from the schedule");
            assertEquals(schedule.length, p.path("checkpoints").asInt(), name);
            assertEquals(requests, p.path("requests").asInt(), name);
            double cil = p.path("cil").asDouble();
            assertTrue(cil > 0 && Double.isFinite(cil), name + ": CIL " + cil);
            double acc = p.path("accuracy").asDouble();
            assertTrue(acc >= 0 && acc <= 1, name + ": accuracy " + acc);
            assertTrue(p.path("stall_ms").asDouble() >= 0, name);
            assertEquals("tcp", p.path("path").asText(), name);
            assertTrue(p.path("predicted_cil").isNumber(), name); // may be negative: see the README on short warm-ups
            if (p.path("checkpoints").asInt() > 0) {
                assertTrue(p.path("swaps").asInt() > 0, name + ": no update reached the consumer");
                assertTrue(p.path("update_ms_mean").asDouble() >= 0, name);
                assertTrue(p.path("update_ms_p90").asDouble() >= 0, name);
            } else {
                assertTrue(p.path("update_ms_mean").isNull(), name);
                assertEquals(0.0, p.path("stall_ms").asDouble(), name);
            }
        }
        JsonNode none = policies.get(4);
        assertEquals(0, none.path("checkpoints").asInt());
        assertTrue(root.path("verdict").asText().startsWith("winner: "), root.path("verdict").asText());
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
