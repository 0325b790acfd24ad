package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import picocli.CommandLine;

/** The CLI's exit code for every failure: 2 for refused input, 1 for operational failures. */
class ExitCodeTest {
    /** Every reason and the code it exits with; written out, not derived, so that a change is a decision. */
    static final Map<ViperException.Reason, Integer> EXPECTED = Map.ofEntries(
            Map.entry(ViperException.Reason.CONFIG, 2),
            Map.entry(ViperException.Reason.FORMAT, 2),
            Map.entry(ViperException.Reason.NOT_FOUND, 2),
            Map.entry(ViperException.Reason.UNSUPPORTED, 2),
            Map.entry(ViperException.Reason.CORRUPT, 1),
            Map.entry(ViperException.Reason.TRANSFER, 1),
            Map.entry(ViperException.Reason.UNAVAILABLE, 1),
            Map.entry(ViperException.Reason.TIMEOUT, 1),
            Map.entry(ViperException.Reason.CLOSED, 1),
            Map.entry(ViperException.Reason.IO, 1),
            Map.entry(ViperException.Reason.INTERNAL, 1));

    @Test
    void everyReasonHasAnExpectedCode() {
        assertEquals(EnumSet.allOf(ViperException.Reason.class), EnumSet.copyOf(EXPECTED.keySet()));
    }

    @ParameterizedTest
    @EnumSource(ViperException.Reason.class)
    void eachReasonExitsWithItsCode(ViperException.Reason reason) {
        int expected = EXPECTED.get(reason);
        assertEquals(expected, ViperMain.exitCode(ViperException.of(reason, "x")), reason.name());
        assertEquals(expected == 2 ? ViperMain.EXIT_USAGE : ViperMain.EXIT_FAILURE, expected);
    }

    @Test
    void flagErrorsAreRefusedInputAndOtherExceptionsOperational() {
        CommandLine cl = new CommandLine(new ViperMain());
        assertEquals(2, ViperMain.exitCode(new CommandLine.ParameterException(cl, "bad flag")));
        assertEquals(1, ViperMain.exitCode(new UncheckedIOException(new IOException("disk"))));
        assertEquals(1, ViperMain.exitCode(new IllegalStateException("bug")));
        assertEquals(3, ViperMain.EXIT_NO_UPDATE);
    }

    @Test
    void anOperationalFailureOfACommandExitsOneWithOneLine() {
        // publish's flush timing out, a transfer failing, a full disk: thrown from a command, one line, exit 1
        for (ViperException.Reason reason : EnumSet.complementOf(EnumSet.of(
                ViperException.Reason.CONFIG,
                ViperException.Reason.FORMAT,
                ViperException.Reason.NOT_FOUND,
                ViperException.Reason.UNSUPPORTED))) {
            InspectCommandTest.Run r = Throwing.run(
                    ViperException.of(reason, "m v1: " + reason.name().toLowerCase(Locale.ROOT) + " failed"));
            assertEquals(1, r.exit(), reason + ": " + r.err());
            assertEquals(List.of("viper: m v1: " + reason.name().toLowerCase(Locale.ROOT) + " failed"), r.errLines());
        }
        InspectCommandTest.Run refused =
                Throwing.run(ViperException.of(ViperException.Reason.NOT_FOUND, "model m v9 is not known"));
        assertEquals(2, refused.exit());
        assertTrue(refused.err().startsWith("viper: model m v9 is not known"), refused.err());
    }

    @Test
    void aPathOrPortTheUserGaveIsRefusedInputWhateverWrapsIt() {
        // inspect of a file one may not read exited 1 while --config of the same file exited 2
        assertEquals(
                2,
                ViperMain.exitCode(ViperException.of(
                        ViperException.Reason.IO, "x: permission denied", new AccessDeniedException("/x"))));
        assertEquals(2, ViperMain.exitCode(new UncheckedIOException(new NoSuchFileException("/no/dir/x"))));
        assertEquals(
                2,
                ViperMain.exitCode(ViperException.of(
                        ViperException.Reason.UNAVAILABLE, "bind", new BindException("Address already in use"))));
        assertEquals(
                1,
                ViperMain.exitCode(
                        ViperException.of(ViperException.Reason.IO, "x", new IOException("No space left on device"))));
    }

    @Test
    void anIoExceptionOfACommandSaysWhatWentWrongNotJustThePath() {
        // the JDK's message of a missing directory is the path alone: "viper: /tmp/nodir/s"
        InspectCommandTest.Run r = Throwing.run(new NoSuchFileException("/tmp/nodir/s"));
        assertEquals(2, r.exit(), r.err());
        assertEquals(List.of("viper: no such file or directory: /tmp/nodir/s"), r.errLines());
    }

    @Test
    void runningOutOfMemoryIsOneLineAndExitOne() {
        InspectCommandTest.Run r = Throwing.run(new OutOfMemoryError("Unable to allocate 1099511631856 bytes"));
        assertEquals(1, r.exit());
        assertEquals(1, r.errLines().size(), r.err());
        assertTrue(r.err().startsWith("viper: out of memory: Unable to allocate 1099511631856 bytes"), r.err());
    }

    @Test
    void anEmptyPathIsRefusedNamingTheFlag() {
        StringWriter err = new StringWriter();
        int exit = ViperMain.execute(
                new String[] {"export", "--pfs", "", "--model", "m", "--out", "/tmp/x.safetensors"},
                new PrintWriter(new StringWriter(), true),
                new PrintWriter(err, true));
        assertEquals(2, exit);
        assertEquals(1, err.toString().lines().count(), err.toString());
        assertTrue(err.toString().contains("'--pfs'") && err.toString().contains("an empty path"), err.toString());
    }

    @Test
    void aMapOptionsFormatErrorNamesTheOptionOnce() {
        StringWriter err = new StringWriter();
        int exit = ViperMain.execute(
                new String[] {"publish", "--set", "noequals"},
                new PrintWriter(new StringWriter(), true),
                new PrintWriter(err, true));
        assertEquals(2, exit);
        assertTrue(err.toString().contains("option '--set'"), err.toString());
        assertFalse(err.toString().contains("option option"), err.toString());
    }

    /** A command that throws any throwable, checked or an error, run through the same handlers as {@code viper}. */
    @CommandLine.Command(name = "throwing")
    static final class Throwing implements Callable<Integer> {
        private final Throwable failure;

        Throwing(Throwable failure) {
            this.failure = failure;
        }

        @Override
        public Integer call() throws Exception {
            if (failure instanceof Error e) {
                throw e;
            }
            throw (Exception) failure;
        }

        static InspectCommandTest.Run run(Throwable failure) {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int exit = ViperMain.execute(
                    new CommandLine(new Throwing(failure)),
                    new String[0],
                    new PrintWriter(out, true),
                    new PrintWriter(err, true));
            return new InspectCommandTest.Run(exit, out.toString(), err.toString());
        }
    }
}
