package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
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
                    + "|touch_at_once_s|cold_floor_s|concurrent_floor_s)\":([0-9.]+)");

    @TempDir
    Path dir;

    @Test
    void flagsAreCheckedBeforeAnythingRuns() {
        BenchCommandTest.refused("--size 100k: at least 1m, and a multiple of 4k", "bench", "pfs", "--size", "100k");
        BenchCommandTest.refused("--size 1000001: at least 1m", "bench", "pfs", "--size", "1000001");
        BenchCommandTest.refused("--consumers 17 must be between 0 and 16", "bench", "pfs", "--consumers", "17");
        BenchCommandTest.refused("--size 1t: the bench needs about", "bench", "pfs", "--size", "1t");
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
            assertEquals(10, figures, line);
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
