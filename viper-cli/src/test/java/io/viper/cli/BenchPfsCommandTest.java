package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code viper bench pfs}: bad flags are refused with one line and exit code 2; a small run measures the flush, the
 * loads and the device's figures, one JSON line per block setting, and leaves nothing behind in {@code --dir}.
 */
class BenchPfsCommandTest {
    private static final Pattern SECONDS =
            Pattern.compile("\"(flush_s|cold_load_s|concurrent_load_s|direct_write_s|direct_read_s|fill_s|touch_s"
                    + "|touch_at_once_s|cold_floor_s|concurrent_floor_s|warm_load_cpu_s|concurrent_cpu_s)\":([0-9.]+)");

    @TempDir
    Path dir;

    @Test
    void flagsAreCheckedBeforeAnythingRuns() {
        BenchCommandTest.refused("--size 100k: at least 1m, and a multiple of 4k", "bench", "pfs", "--size", "100k");
        BenchCommandTest.refused("--size 1000001: at least 1m", "bench", "pfs", "--size", "1000001");
        BenchCommandTest.refused("--consumers 17 must be between 0 and 16", "bench", "pfs", "--consumers", "17");
        BenchCommandTest.refused("--size 1t: the bench needs about", "bench", "pfs", "--size", "1t");
        BenchCommandTest.refused("--repeat 0 must be between 1 and 20", "bench", "pfs", "--repeat", "0");
        BenchCommandTest.refused("--repeat 21 must be between 1 and 20", "bench", "pfs", "--repeat", "21");
    }

    @Test
    void roundsRunEveryRowInTurnAndEndWithTheMediansOfTheirRatios() {
        List<String> lines = twoRounds("1m,0", "--json");
        assertEquals(6, lines.size(), lines.toString());
        for (int i = 0; i < 4; i++) {
            assertTrue(lines.get(i).startsWith("{\"round\":" + (i / 2 + 1) + ","), lines.get(i));
            assertTrue(lines.get(i).contains("\"block_bytes\":" + (i % 2 == 0 ? 1048576 : 0)), lines.get(i));
        }
        for (int i = 4; i < 6; i++) {
            String line = lines.get(i);
            assertTrue(line.startsWith("{\"medians_of_rounds\":2,\"size_bytes\":1048576,"), line);
            Matcher flush =
                    Pattern.compile("\"flush_vs_direct_write\":([0-9.]+)").matcher(line);
            assertTrue(flush.find() && Double.parseDouble(flush.group(1)) > 0, line);
            // the floor is the slowest of the direct read and two others: never under it
            Matcher floor =
                    Pattern.compile("\"floor_vs_direct_read\":([0-9.]+)").matcher(line);
            assertTrue(floor.find() && Double.parseDouble(floor.group(1)) >= 1, line);
            assertTrue(line.contains("\"at_once_vs_one\":null"), "no consumers at once: " + line);
            assertTrue(line.contains("\"at_once_vs_cpu\":null"), "no consumers at once: " + line);
        }
    }

    @Test
    void theTableEndsWithEachRowsMediansAndRanges() {
        List<String> lines = twoRounds("1m");
        assertTrue(lines.get(lines.size() - 2).contains("(medians of 2 rounds, their range)"), lines.toString());
        String medians = lines.getLast();
        assertTrue(
                medians.matches("1m +1m( +\\| +[0-9.]+x \\([0-9.]+-[0-9.]+x\\)){4} +\\| +- +\\| +- +\\| +- *"),
                medians);
    }

    /** The output lines of two rounds of 1 MiB with {@code blockBytes}, warm, no consumers at once. */
    private List<String> twoRounds(String blockBytes, String... more) {
        List<String> args = new ArrayList<>(List.of(
                "bench",
                "pfs",
                "--size",
                "1m",
                "--block-bytes",
                blockBytes,
                "--consumers",
                "0",
                "--keep-cache",
                "--repeat",
                "2",
                "--dir",
                dir.toString()));
        args.addAll(List.of(more));
        InspectCommandTest.Run r = InspectCommandTest.run(args.toArray(String[]::new));
        assertEquals(0, r.exit(), r.err());
        return r.out().lines().toList();
    }

    @Test
    void theMedianIsTheMiddleValueOrTheMeanOfTheTwo() {
        assertEquals(2.0, BenchPfsCommand.median(new double[] {1, 2, 9}));
        assertEquals(1.5, BenchPfsCommand.median(new double[] {1, 2}));
        assertEquals(4.0, BenchPfsCommand.median(new double[] {4}));
    }

    @Test
    void aSmallRunMeasuresEveryStepAndCleansUp() throws IOException {
        InspectCommandTest.Run r = InspectCommandTest.run(
                "bench",
                "pfs",
                "--size",
                "2m",
                "--block-bytes",
                "1m,0",
                "--consumers",
                "2",
                "--keep-cache",
                "--json",
                "--dir",
                dir.toString());
        assertEquals(0, r.exit(), r.err());
        List<String> lines = r.out().lines().toList();
        assertEquals(2, lines.size(), r.out());
        for (String line : lines) {
            Matcher m = SECONDS.matcher(line);
            int figures = 0;
            while (m.find()) {
                assertTrue(Double.parseDouble(m.group(2)) > 0, m.group(1) + " in " + line);
                figures++;
            }
            assertEquals(12, figures, line);
            assertTrue(line.contains("\"size_bytes\":2097152"), line);
        }
        assertTrue(
                lines.get(0).contains("\"block_bytes\":1048576") && lines.get(1).contains("\"block_bytes\":0"));
        assertTrue(r.err().contains("--keep-cache: the reads were warm"), r.err());
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(List.of(), left.toList(), "every run's files removed");
        }
    }
}
