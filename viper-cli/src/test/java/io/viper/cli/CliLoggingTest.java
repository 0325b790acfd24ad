package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.logging.ConsoleHandler;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Commands that do not configure logging themselves log in {@link CliLogging}'s one-line records
 * too, warnings only: not the JDK's two-line default with its INFO records.
 */
class CliLoggingTest {
    @TempDir
    Path dir;

    private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
    private PrintStream savedErr;
    private Handler[] savedHandlers;
    private Level savedRootLevel;
    private Level savedViperLevel;

    @BeforeEach
    void captureStderr() {
        // The log handler writes to System.err as it was when the handler was made, in the command.
        savedErr = System.err;
        Logger root = Logger.getLogger("");
        savedHandlers = root.getHandlers();
        savedRootLevel = root.getLevel();
        savedViperLevel = Logger.getLogger("io.viper").getLevel();
        System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
        // The JDK's default, which the viper command starts with: INFO records to stderr (the test JVM's is quieter).
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        root.addHandler(new ConsoleHandler());
        root.setLevel(Level.INFO);
    }

    @AfterEach
    void restoreLogging() {
        System.setErr(savedErr);
        Logger root = Logger.getLogger("");
        for (Handler h : root.getHandlers()) {
            root.removeHandler(h);
        }
        for (Handler h : savedHandlers) {
            root.addHandler(h);
        }
        root.setLevel(savedRootLevel);
        Logger.getLogger("io.viper").setLevel(savedViperLevel);
    }

    private String logged() {
        return stderr.toString(StandardCharsets.UTF_8);
    }

    @Test
    void benchRepositoryLogsNothingWhenAllGoesWell() {
        InspectCommandTest.Run r = InspectCommandTest.run("bench", "repository", "--size", "16k", "--versions", "1", "--dir",
                dir.resolve("repo").toString());
        assertEquals(0, r.exit(), r.err());
        assertEquals("", logged());
    }

    @Test
    void exportOfADamagedRepositoryWarnsInOneLineRecords() throws Exception {
        Path version = Files.createDirectories(dir.resolve("pfs/m/17"));
        Files.writeString(version.resolve("manifest.json"), "not json");
        Files.writeString(dir.resolve("pfs/m/LATEST"), "garbage");
        StringWriter err = new StringWriter();
        int exit = ViperMain.execute(new String[] {"export", "--pfs", dir.resolve("pfs").toString(), "--model", "m", "--out",
            dir.resolve("m.safetensors").toString()}, new PrintWriter(new StringWriter(), true), new PrintWriter(err, true));
        assertEquals(2, exit, err.toString());
        assertEquals(List.of("viper: model m has no version in " + dir.resolve("pfs")), err.toString().lines().toList());
        List<String> records = logged().lines().toList();
        assertTrue(records.stream().anyMatch(l -> l.contains("manifest is not valid JSON")), logged());
        assertTrue(records.stream().allMatch(l -> l.startsWith("viper warning PfsRepository: ")), logged());
    }
}
