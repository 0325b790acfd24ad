package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperException;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
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
        for (ViperException.Reason reason : EnumSet.complementOf(EnumSet.of(ViperException.Reason.CONFIG, ViperException.Reason.FORMAT,
                ViperException.Reason.NOT_FOUND, ViperException.Reason.UNSUPPORTED))) {
            InspectCommandTest.Run r = Failing.run(ViperException.of(reason, "m v1: " + reason.name().toLowerCase() + " failed"));
            assertEquals(1, r.exit(), reason + ": " + r.err());
            assertEquals(List.of("viper: m v1: " + reason.name().toLowerCase() + " failed"), r.errLines());
        }
        InspectCommandTest.Run refused = Failing.run(ViperException.of(ViperException.Reason.NOT_FOUND, "model m v9 is not known"));
        assertEquals(2, refused.exit());
        assertTrue(refused.err().startsWith("viper: model m v9 is not known"), refused.err());
    }

    /** A command that throws what it is given, run through the same handlers as {@code viper}. */
    @CommandLine.Command(name = "failing")
    static final class Failing implements Runnable {
        private final RuntimeException failure;

        Failing(RuntimeException failure) {
            this.failure = failure;
        }

        @Override
        public void run() {
            throw failure;
        }

        static InspectCommandTest.Run run(RuntimeException failure) {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int exit = ViperMain.execute(new CommandLine(new Failing(failure)), new String[0],
                    new PrintWriter(out, true), new PrintWriter(err, true));
            return new InspectCommandTest.Run(exit, out.toString(), err.toString());
        }
    }
}
