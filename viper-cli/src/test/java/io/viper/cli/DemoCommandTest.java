package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code viper demo} without processes: option validation (planning and the report are viper-demo's, tested there). */
class DemoCommandTest {
    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "--policies epoch,bogus | unknown policy 'bogus'",
                "--policies epoch,epoch | 'epoch' is given twice",
                "--policies , | give at least one",
                "--iterations 5 | --iterations 5 is outside",
                "--warmup 3 | --warmup 3 must be at least 10",
                "--pace 0ms | --pace 0ms is outside",
                "--pace soon | is not a duration",
                "--rate 0 | --rate 0.0 is outside",
                "--transport carrier-pigeon | expected inline, host (or ucx), tcp, pfs (or file)",
                "--notifier nonsense | is not a notifier address",
                "--plot out.jpg | must end in .png",
                "--policies fixed,nothing | (known: epoch, fixed, adaptive, optimal, online, hindsight, none)",
                "--workload drifting | --workload 'drifting': expected stages or stationary or drift",
                "--seeds 0 | --seeds 0 is outside 1..1000",
                "--budget 0 | --budget 0 is outside 1..1800",
                "--objective fresh | --objective: unknown objective 'fresh'",
                "--replicas 0 | --replicas 0 is outside 1..64",
            })
    void badOptionsAreOneLineAndExitTwo(String args, String expected) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        String[] argv = ("demo " + args.strip()).split(" ");
        int code = ViperMain.execute(argv, new PrintWriter(out, true), new PrintWriter(err, true));
        assertEquals(2, code, err.toString());
        String e = err.toString().strip();
        assertTrue(e.startsWith("viper: ") && !e.contains("\n"), e);
        assertTrue(e.contains(expected), e);
        assertEquals("", out.toString());
    }
}
