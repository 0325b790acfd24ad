package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Issue 38, item 9: {@code viper schedule} says when its advice should not be taken, and what its numbers mean. */
class ScheduleWarningsTest {
    static Path log(Path dir, int n, double slope) throws Exception {
        Random r = new Random(3);
        StringBuilder sb = new StringBuilder("iteration,loss\n");
        for (int i = 1; i <= n; i++) {
            double l = 1.0 + slope * i + 0.02 * r.nextGaussian();
            sb.append(i)
                    .append(',')
                    .append(String.format(Locale.ROOT, "%.6f", l))
                    .append('\n');
        }
        Path f = dir.resolve("loss.csv");
        Files.writeString(f, sb);
        return f;
    }

    @Test
    void aRisingFitIsWarnedOfInTextAndJson(@TempDir Path dir) throws Exception {
        Path f = log(dir, 1000, 2e-4);
        ScheduleCommandTest.Run r = ScheduleCommandTest.run(ScheduleCommandTest.args("--loss-log", f.toString()));
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("warning      the fitted curve rises after the warm-up"), r.out());
        ScheduleCommandTest.Run j =
                ScheduleCommandTest.run(ScheduleCommandTest.args("--loss-log", f.toString(), "--json"));
        JsonNode w = new ObjectMapper().readTree(j.out()).get("warnings");
        assertTrue(w != null && w.get(0).asText().startsWith("the fitted curve rises"), j.out());
    }

    @Test
    void aShortWarmupIsWarnedOf(@TempDir Path dir) throws Exception {
        Path f = log(dir, 12, -0.02);
        ScheduleCommandTest.Run r =
                ScheduleCommandTest.run(ScheduleCommandTest.args("--loss-log", f.toString(), "--warmup", "12"));
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("warning      only 12 warm-up losses"), r.out());
    }

    @Test
    void theCilSaysItsUnitAndAFallingCurveGetsNoWarning() {
        ScheduleCommandTest.Run r = ScheduleCommandTest.run(
                ScheduleCommandTest.args("--curve", "exp3:2,0.00125,0.3", "--algorithm", "optimal"));
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("predicted loss summed over the 200000 requests: loss units x requests"), r.out());
        assertFalse(r.out().contains("the fitted curve rises"), r.out());
    }

    @Test
    void theHelpSaysWhereTheCostsAreRead() {
        ScheduleCommandTest.Run r = ScheduleCommandTest.run("schedule", "--help");
        String help = r.out().replaceAll("\\s+", " ");
        assertTrue(help.contains("viper_producer_stall_seconds"), help);
        assertTrue(help.contains("viper_update_latency_seconds"), help);
        assertTrue(help.contains("latency_ms"), help);
        assertTrue(help.contains("1 / the request rate"), help);
    }
}
