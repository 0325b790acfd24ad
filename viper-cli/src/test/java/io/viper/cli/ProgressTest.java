package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;

/** {@link Progress}: a status line on a terminal, rewritten in place and cleared at the end; nothing otherwise. */
class ProgressTest {
    @Test
    void onATerminalTheLineShowsStageBytesRateAndTimeAndIsClearedAtTheEnd() throws Exception {
        StringWriter err = new StringWriter();
        try (Progress p = new Progress(new PrintWriter(err), true, false)) {
            assertTrue(p.enabled());
            p.stage("flushing to the PFS", 4L << 20);
            p.add(1L << 20);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!err.toString().contains("\rflushing to the PFS: 1.0 MiB / 4.0 MiB (25%), ")
                    && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(err.toString().contains("\rflushing to the PFS: 1.0 MiB / 4.0 MiB (25%), "), err.toString());
            assertTrue(err.toString().matches("(?s).*MiB/s, [0-9]+\\.[0-9] s.*"), err.toString());
        }
        String all = err.toString();
        assertTrue(all.endsWith("\r"), "cleared: " + all);
        assertFalse(all.contains("\n"), "one line rewritten in place: " + all);
        Thread.sleep(500);
        assertEquals(all, err.toString(), "nothing drawn after close");
    }

    @Test
    void notOnATerminalOrWithJsonNothingIsPrinted() throws Exception {
        for (boolean[] flags : new boolean[][] {{false, false}, {true, true}, {false, true}}) {
            StringWriter err = new StringWriter();
            try (Progress p = new Progress(new PrintWriter(err), flags[0], flags[1])) {
                assertFalse(p.enabled());
                p.stage("reading", 100);
                p.add(50);
                Thread.sleep(500);
            }
            assertEquals("", err.toString());
        }
    }

    @Test
    void theLineSaysWhatIsKnown() {
        assertEquals("announcing, 0.5 s", Progress.line("announcing", 0, -1, 0.5));
        assertEquals(
                "reading: 512.0 MiB / 1.0 GiB (50%), 256.0 MiB/s, 2.0 s",
                Progress.line("reading", 512L << 20, 1L << 30, 2.0));
        assertEquals("consuming: 3.0 KiB, 1.5 KiB/s, 2.0 s", Progress.line("consuming", 3072, -1, 2.0));
        assertEquals("staging: 0 B / 10 B (0%), 0.0 s", Progress.line("staging", 0, 10, 0));
        assertEquals("1023 B", Progress.bytes(1023));
    }
}
