package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.scheduler.Schedule;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code viper demo} without processes: option validation, planning, and the verdict line. */
class DemoCommandTest {
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--policies epoch,bogus | unknown policy 'bogus'",
        "--policies epoch,epoch | 'epoch' is given twice",
        "--policies , | give at least one",
        "--iterations 5 | --iterations 5 is outside",
        "--warmup 3 | --warmup 3 must be at least 10",
        "--pace 0ms | --pace 0ms is outside",
        "--pace soon | is not a duration",
        "--rate 0 | --rate 0.0 is outside",
        "--transport carrier-pigeon | expected ucx, tcp or file",
        "--notifier nonsense | is not a notifier address",
        "--plot out.jpg | must end in .png",
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

    @Test
    void theSameSeedPlansTheSameSchedules() {
        DemoCommand.Settings s = new DemoCommand.Settings(DemoCommand.ALL_POLICIES, 400, 40, 5_000_000, 200, "tcp", "embedded://127.0.0.1:0", 3);
        Map<String, Schedule> a = DemoCommand.plan(s).schedules();
        Map<String, Schedule> b = DemoCommand.plan(s).schedules();
        assertEquals(a, b);
        assertEquals(List.copyOf(a.keySet()), DemoCommand.ALL_POLICIES);
        assertEquals(0, a.get("none").count());
        assertEquals(List.of(80L, 120L), List.of(a.get("epoch").checkpoints()[0], a.get("epoch").checkpoints()[1]));
        for (Schedule sch : a.values()) {
            assertTrue(sch.count() <= DemoCommand.MAX_CHECKPOINTS, sch.toString());
            for (long c : sch.checkpoints()) {
                assertTrue(c > 40 && c <= 400, sch.toString());
            }
        }
    }

    @Test
    void theVerdictNamesTheWinnerAgainstEpochOrSaysViperLost() throws Exception {
        var m = new ObjectMapper();
        var plan = DemoCommand.plan(new DemoCommand.Settings(List.of("epoch", "fixed"), 200, 20, 5_000_000, 100, "tcp", "embedded://127.0.0.1:0", 1));
        String consumer = "{\"requests\":4,\"cil\":%s,\"correct\":3,\"losses\":[1,1,1,1],\"updates\":[{\"version\":1,\"latency_ms\":9,\"path\":\"tcp\"},"
                + "{\"version\":2,\"latency_ms\":2,\"path\":\"tcp\"},{\"version\":3,\"latency_ms\":4,\"path\":\"tcp\"}]}";
        String producer = "{\"checkpoints\":2,\"iterations\":[30,40],\"stall_ms\":0.5,\"max_late_ms\":1}";
        var epoch = DemoCommand.outcome("epoch", plan.schedules().get("epoch"), m.readTree(producer), m.readTree(consumer.formatted("4.0")), 1);
        var fixed = DemoCommand.outcome("fixed", plan.schedules().get("fixed"), m.readTree(producer), m.readTree(consumer.formatted("3.0")), 1);
        assertEquals(0.75, epoch.accuracy());
        assertEquals(2, epoch.swaps());
        assertEquals(3.0, epoch.updateMsMean());
        assertEquals(4.0, epoch.updateMsP90());
        assertEquals("tcp", epoch.path());
        assertEquals("winner: fixed with CIL 3.00, 25.0% less loss than epoch (4.00) with 2 checkpoints instead of 2",
                DemoCommand.verdict(List.of(epoch, fixed)));
        var worse = DemoCommand.outcome("fixed", plan.schedules().get("fixed"), m.readTree(producer), m.readTree(consumer.formatted("5.0")), 1);
        assertTrue(DemoCommand.verdict(List.of(epoch, worse)).contains("Viper did not beat the baseline"), DemoCommand.verdict(List.of(epoch, worse)));
    }
}
