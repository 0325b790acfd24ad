package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Commands that do not configure logging themselves log in {@link CliLogging}'s one-line records too, warnings only:
 * not the JDK's two-line default with its INFO records.
 */
class CliLoggingTest {
    @TempDir
    Path dir;

    private final StderrCapture stderr = new StderrCapture();

    @AfterEach
    void restore() {
        stderr.close();
    }

    @Test
    void theLevelsOutliveGarbageCollection() {
        // JUL holds loggers weakly: levels set on loggers nobody held were lost at a GC, and a long quiet
        // consume started printing Kafka's NetworkClient warnings
        CliLogging.configure(false);
        for (int i = 0; i < 5; i++) {
            System.gc();
        }
        assertEquals(Level.WARNING, Logger.getLogger("io.viper").getLevel());
        assertEquals(Level.SEVERE, Logger.getLogger("org.apache.kafka").getLevel());
        assertEquals(Level.SEVERE, Logger.getLogger("io.netty").getLevel());
    }

    @Test
    void benchRepositoryLogsNothingWhenAllGoesWell() {
        InspectCommandTest.Run r = InspectCommandTest.run(
                "bench",
                "repository",
                "--size",
                "16k",
                "--versions",
                "1",
                "--dir",
                dir.resolve("repo").toString());
        assertEquals(0, r.exit(), r.err());
        assertEquals("", stderr.text());
    }

    @Test
    void exportOfADamagedRepositoryWarnsInOneLineRecords() throws Exception {
        Path version = Files.createDirectories(dir.resolve("pfs/m/17"));
        Files.writeString(version.resolve("manifest.json"), "not json");
        Files.writeString(dir.resolve("pfs/m/LATEST"), "garbage");
        StringWriter err = new StringWriter();
        int exit = ViperMain.execute(
                new String[] {
                    "export",
                    "--pfs",
                    dir.resolve("pfs").toString(),
                    "--model",
                    "m",
                    "--out",
                    dir.resolve("m.safetensors").toString()
                },
                new PrintWriter(new StringWriter(), true),
                new PrintWriter(err, true));
        assertEquals(2, exit, err.toString());
        assertEquals(
                List.of("viper: model m has no version in " + dir.resolve("pfs")),
                err.toString().lines().toList());
        List<String> records = stderr.text().lines().toList();
        assertTrue(records.stream().anyMatch(l -> l.contains("manifest is not valid JSON")), stderr.text());
        assertTrue(records.stream().allMatch(l -> l.startsWith("viper warning PfsRepository: ")), stderr.text());
    }
}
