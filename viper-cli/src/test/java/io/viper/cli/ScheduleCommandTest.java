package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.StalenessModel;
import io.viper.scheduler.CilSimulator;
import io.viper.scheduler.ScheduleInput;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ScheduleCommandTest {
    static final String[] COSTS = {
        "--warmup",
        "1000",
        "--end",
        "6000",
        "--inferences",
        "200000",
        "--t-train",
        "0.05",
        "--t-save",
        "0.4",
        "--t-load",
        "1.5",
        "--t-infer",
        "0.002"
    };

    record Run(int code, String out, String err) {}

    static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = ViperMain.execute(args, new PrintWriter(out, true), new PrintWriter(err, true));
        return new Run(code, out.toString(), err.toString());
    }

    /** The default costs, with any of them replaced by {@code more}, and the rest of {@code more} appended. */
    static String[] args(String... more) {
        List<String> a = new ArrayList<>(List.of("schedule"));
        a.addAll(List.of(COSTS));
        for (int i = 0; i < more.length; i++) {
            int at = a.indexOf(more[i]);
            if (at >= 0 && i + 1 < more.length) {
                a.set(at + 1, more[++i]);
            } else {
                a.add(more[i]);
            }
        }
        return a.toArray(String[]::new);
    }

    static Path noisyLog(Path dir) throws Exception {
        Random r = new Random(9);
        StringBuilder sb = new StringBuilder("iteration,loss\n");
        for (int i = 1; i <= 1000; i++) {
            double l = 2.0 * Math.exp(-i / 800.0) + 0.3;
            sb.append(i)
                    .append(',')
                    .append(String.format(Locale.ROOT, "%.6f", l * (1 + 0.03 * r.nextGaussian())))
                    .append('\n');
        }
        Path f = dir.resolve("loss.csv");
        Files.writeString(f, sb);
        return f;
    }

    @Test
    void jsonHoldsTheContractAndTheExactCil() throws Exception {
        Run r = run(args("--curve", "exp3:2,0.00125,0.3", "--json", "--algorithm", "fixed"));
        assertEquals(0, r.code(), r.err());
        JsonNode j = new ObjectMapper().readTree(r.out());
        assertEquals("exp3", j.get("curve").get("name").asText());
        assertEquals(3, j.get("curve").get("params").size());
        assertTrue(j.get("curve").get("rmse").isNull());
        assertEquals("fixed", j.get("algorithm").asText());
        long[] c = new long[j.get("checkpoints").size()];
        for (int i = 0; i < c.length; i++) {
            c[i] = j.get("checkpoints").get(i).asLong();
        }
        ScheduleInput in =
                new ScheduleInput(CurveFamily.EXP3.curve(2, 0.00125, 0.3), 1000, 6000, 200000, 0.05, 0.4, 1.5, 0.002);
        assertEquals(new CilSimulator(in).cil(c), j.get("cil").asDouble(), 0.0);
        assertEquals(0.4 * c.length, j.get("overhead_s").asDouble(), 1e-9);
        assertEquals("viper", j.get("objective").asText(), "no drift measured: the same as Viper's");
        for (String a : new String[] {"fixed", "adaptive", "optimal", "online", "epoch"}) {
            JsonNode s = j.get("compare").get(a);
            long[] sc = new long[s.get("checkpoints").size()];
            for (int i = 0; i < sc.length; i++) {
                sc[i] = s.get("checkpoints").get(i).asLong();
            }
            assertEquals(new CilSimulator(in).cil(sc), s.get("cil").asDouble(), 0.0, a);
        }
        assertArrayEquals(
                c, new ObjectMapper().convertValue(j.get("compare").get("fixed").get("checkpoints"), long[].class));
        assertTrue(j.get("compare").get("optimal").get("cil").asDouble()
                <= j.get("cil").asDouble());
    }

    @Test
    void fitsALossLogAndPrintsEveryAlgorithm(@TempDir Path dir) throws Exception {
        Path log = noisyLog(dir);
        Path png = dir.resolve("s.png");
        Run r = run(args("--loss-log", log.toString(), "--plot", png.toString()));
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("fit error    RMSE"), r.out());
        for (String a : new String[] {"fixed", "adaptive", "optimal", "epoch"}) {
            assertTrue(r.out().lines().anyMatch(l -> l.startsWith(a + " ")), a + " missing in\n" + r.out());
        }
        byte[] img = Files.readAllBytes(png);
        assertTrue(img.length > 10_000 && img[1] == 'P' && img[2] == 'N' && img[3] == 'G', "not a PNG");
        Path svg = dir.resolve("s.svg");
        assertEquals(
                0,
                run(args("--loss-log", log.toString(), "--plot", svg.toString(), "--json"))
                        .code());
        assertTrue(Files.readString(svg).contains("<svg"));
    }

    @Test
    void theStalenessObjectiveTakesTheDriftFromTheOptionOrTheLogsDeployedColumns(@TempDir Path dir) throws Exception {
        String[] curve = {"--curve", "exp3:2,0.00125,0.3", "--json", "--algorithm", "online"};
        JsonNode given = new ObjectMapper()
                .readTree(run(args(concat(curve, "--drift", "0.0001"))).out());
        assertEquals("staleness", given.get("objective").asText());
        assertEquals(1e-4, given.get("drift").asDouble(), 0.0);
        ScheduleInput in = new ScheduleInput(
                CurveFamily.EXP3.curve(2, 0.00125, 0.3),
                1000,
                6000,
                200000,
                0.05,
                0.4,
                1.5,
                0.002,
                new StalenessModel(1e-4));
        long[] c = new ObjectMapper().convertValue(given.get("checkpoints"), long[].class);
        assertTrue(c.length > 0 && c.length <= 200, given.toString());
        assertEquals(new CilSimulator(in).cil(c), given.get("cil").asDouble(), 0.0);
        JsonNode viper = new ObjectMapper()
                .readTree(run(args(concat(curve, "--objective", "viper"))).out());
        assertEquals(0.0, viper.get("drift").asDouble());
        assertTrue(
                given.get("compare").get("none") == null
                        && given.get("compare").get("optimal").get("cil").asDouble()
                                > viper.get("compare").get("optimal").get("cil").asDouble(),
                "drift adds loss");

        // a log whose deployed versions lose 0.001 per iteration of age more than the curve explains
        StringBuilder sb = new StringBuilder("iteration,loss,deployed_iteration,deployed_loss\n");
        for (int i = 1; i <= 1000; i++) {
            double l = 2.0 * Math.exp(-i / 800.0) + 0.3;
            long deployed = (long) i - i % 50;
            double stale = 2.0 * Math.exp(-deployed / 800.0) + 0.3 + 0.001 * (i - deployed);
            sb.append(i)
                    .append(',')
                    .append(l)
                    .append(',')
                    .append(deployed)
                    .append(',')
                    .append(stale)
                    .append('\n');
        }
        Path log = dir.resolve("stale.csv");
        Files.writeString(log, sb);
        Run fitted = run(args("--loss-log", log.toString(), "--json"));
        assertEquals(0, fitted.code(), fitted.err());
        assertEquals(
                0.001, new ObjectMapper().readTree(fitted.out()).get("drift").asDouble(), 2e-4);
        Run text = run(args("--loss-log", log.toString()));
        assertTrue(
                text.out().contains("objective    staleness (drift ")
                        && text.out().contains("deployed-version columns"),
                text.out());
    }

    @Test
    void aScheduleThatWouldNotFitInMemoryIsRefusedInOneLine() {
        Run r = run(args(
                "--curve",
                "exp3:2,0.0001,0.3",
                "--end",
                "101000",
                "--max-checkpoints",
                "3999",
                "--inferences",
                "5000000"));
        assertEquals(2, r.code(), r.err());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(
                r.err().startsWith("viper: optimal: (e - s) x max-checkpoints = 399,903,999 back-pointers")
                        && r.err().contains("do not fit"),
                r.err());
    }

    /** The one line a failing run prints, after checking that it exits 2 with exactly that line. */
    static String refused(String... more) {
        Run r = run(args(more));
        assertEquals(2, r.code(), String.join(" ", more) + ": " + r.err());
        assertEquals(1, r.err().lines().count(), r.err());
        assertTrue(r.err().startsWith("viper: "), r.err());
        return r.err().strip().substring("viper: ".length());
    }

    @Test
    void aLossLogThatIsNotARegularFileIsRefusedWithoutReadingIt(@TempDir Path dir) throws Exception {
        Path fifo = dir.resolve("pipe.csv");
        assertEquals(
                0,
                new ProcessBuilder("mkfifo", fifo.toString())
                        .inheritIO()
                        .start()
                        .waitFor(),
                "mkfifo");
        assertTimeoutPreemptively(
                Duration.ofSeconds(30),
                () -> assertEquals(
                        "loss log " + fifo + ": is not a regular file (a pipe, socket or device), not a CSV file",
                        refused("--loss-log", fifo.toString())));
        assertEquals("loss log " + dir + ": is a directory, not a CSV file", refused("--loss-log", dir.toString()));
    }

    @Test
    void aLossLogThatIsNotTextOrNotReadableSaysSo(@TempDir Path dir) throws Exception {
        Path bin = Files.write(dir.resolve("bin.csv"), new byte[] {'1', ',', (byte) 0xff, (byte) 0xfe, 0, 7, '\n'});
        assertEquals(
                "loss log " + bin + ": not UTF-8 text; is it the right file?", refused("--loss-log", bin.toString()));
        Path locked = noisyLog(dir);
        Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));
        if (!Files.isReadable(locked)) { // root reads a file of mode 000; IoProblemsTest checks the wording either way
            assertEquals(
                    "loss log " + locked + ": cannot read: permission denied",
                    refused("--loss-log", locked.toString()));
        }
    }

    @Test
    void aPlotDestinationThatCannotBeWrittenIsRefusedBeforeAnythingIsPrinted(@TempDir Path dir) throws Exception {
        Path isDir = Files.createDirectory(dir.resolve("d.png"));
        Path fifo = dir.resolve("pipe.svg");
        assertEquals(
                0,
                new ProcessBuilder("mkfifo", fifo.toString())
                        .inheritIO()
                        .start()
                        .waitFor(),
                "mkfifo");
        Path notDir = Files.writeString(dir.resolve("file"), "x");
        String[][] cases = {
            {isDir.toString(), "--plot " + isDir + ": is a directory"},
            {fifo.toString(), "--plot " + fifo + ": is not a regular file (a pipe, socket or device)"},
            {
                notDir.resolve("s.png").toString(),
                "--plot " + notDir.resolve("s.png") + ": " + notDir + " is not a directory"
            }
        };
        for (String[] c : cases) {
            Run r = run(args("--curve", "exp3:2,0.001,0.3", "--plot", c[0]));
            assertEquals(2, r.code(), r.err());
            assertEquals("viper: " + c[1], r.err().strip());
            assertEquals("", r.out(), "the result is not printed before the refusal");
        }
    }

    @Test
    void anAlgorithmThatCannotRunIsLeftOutOfTheComparisonUnlessItIsTheOneAskedFor() throws Exception {
        // adaptive takes its threshold from the curve's drops over iterations 1..s: none with --warmup 1
        Run text = run(args("--curve", "exp3:2,0.001,0.3", "--warmup", "1", "--algorithm", "fixed"));
        assertEquals(0, text.code(), text.err());
        assertTrue(text.out().startsWith("curve ") && text.out().contains("algorithm    fixed (every "), text.out());
        assertTrue(
                text.out()
                        .lines()
                        .anyMatch(l -> l.matches("adaptive +- +not compared: the warm-up end must be at least 2 .*")),
                text.out());
        JsonNode j = new ObjectMapper()
                .readTree(run(args("--curve", "exp3:2,0.001,0.3", "--warmup", "1", "--json"))
                        .out());
        assertEquals("optimal", j.get("algorithm").asText());
        assertTrue(j.get("compare").get("adaptive") == null && j.get("compare").get("fixed") != null, j.toString());
        assertTrue(
                j.get("skipped").get("adaptive").asText().startsWith("the warm-up end must be at least 2"),
                j.toString());
        assertTrue(new ObjectMapper()
                        .readTree(run(args("--curve", "exp3:2,0.001,0.3", "--json"))
                                .out())
                        .get("skipped")
                == null);
        assertEquals(
                "--warmup must be 2..50000000 for --algorithm adaptive (its threshold comes from the curve's drops"
                        + " over iterations 1..S), got 1",
                refused("--curve", "exp3:2,0.001,0.3", "--warmup", "1", "--algorithm", "adaptive"));
    }

    static String[] concat(String[] a, String... b) {
        String[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Test
    void userErrorsAreOneLineAndExitTwo(@TempDir Path dir) throws Exception {
        Path bad = dir.resolve("bad.csv");
        Files.writeString(bad, "iteration,loss\n1,2.0\n2,oops\n");
        Path log = noisyLog(dir);
        String[][] cases = {
            {"--curve", "exp3:2,0.001,0.3", "--t-save", "-1"},
            {"--curve", "exp3:2,0.001,0.3", "--end", "1000"},
            {"--curve", "exp3:2,0.001,0.3", "--inferences", "0"},
            {"--loss-log", bad.toString()},
            {"--curve", "exp9:1,2"},
            {"--curve", "pow3:1,2"},
            {"--curve", "exp3:2,0.001,0.3", "--algorithm", "greedy"},
            {"--curve", "exp3:2,0.001,0.3", "--plot", dir.resolve("x.gif").toString()},
            {"--loss-log", dir.resolve("missing.csv").toString()},
            {"--loss-log", log.toString(), "--warmup", "3"},
            {},
            {"--curve", "exp3:2,0.001,0.3", "--objective", "fresh"},
            {"--curve", "exp3:2,0.001,0.3", "--objective", "viper", "--drift", "0.1"},
            {"--curve", "exp3:2,0.001,0.3", "--drift", "-1"},
            {"--curve", "exp3:1e308,1e308,1e308", "--algorithm", "fixed"},
            {"--curve", "exp3:2,0.001,0.3", "--t-train", "0"},
            {"--curve", "exp3:2,0.001,0.3", "--t-infer", "-1"},
            {"--curve", "exp3:2,0.001,0.3", "--t-train", "1e-308", "--t-infer", "1e308"},
            {"--loss-log", dir.resolve("missing.csv").toString(), "--warmup", "-1"},
        };
        String[] expect = {
            "--t-save must be a non-negative number",
            "--end (1000) must be greater than --warmup (1000)",
            "--inferences must be a positive number",
            "line 3",
            "unknown curve 'exp9'",
            "takes 3 parameters, got 2",
            "unknown algorithm 'greedy'",
            ".png or .svg",
            "no such file",
            "need at least 5",
            "--loss-log",
            "unknown objective 'fresh'; known: viper, staleness",
            "--drift goes with --objective staleness",
            "--drift must be a non-negative number",
            "the cumulative inference loss would pass the range of a double",
            "--t-train must be a positive number, got 0.0",
            "--t-infer must be a positive number, got -1.0",
            "--t-train / --t-infer (requests per training iteration) = 1.0E-308 / 1.0E308",
            "--warmup must be at least 0, got -1"
        };
        for (int i = 0; i < cases.length; i++) {
            Run r = run(args(cases[i]));
            assertEquals(2, r.code(), String.join(" ", cases[i]) + ": " + r.err());
            assertEquals(1, r.err().lines().count(), r.err());
            assertTrue(r.err().startsWith("viper: ") && r.err().contains(expect[i]), r.err());
        }
    }
}
