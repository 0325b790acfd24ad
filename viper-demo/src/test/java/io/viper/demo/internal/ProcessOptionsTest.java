package io.viper.demo.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.demo.DemoTransport;
import io.viper.demo.DemoWorkload;
import io.viper.scheduler.OnlineCheckpointPolicy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What the driver writes on a process's command line, the process reads back. */
class ProcessOptionsTest {
    static final ProcessOptions.Run RUN = new ProcessOptions.Run(
            2000, 200, -7, 5000, "embedded://127.0.0.1:0", Optional.empty(), DemoWorkload.STAGES, DemoTransport.HOST);

    @Test
    void producerOptionsSurviveTheCommandLine() {
        ProcessOptions.Producer p = new ProcessOptions.Producer(
                RUN, new long[] {240, 280}, List.of("ucx://127.0.0.1:0", "tcp://127.0.0.1:0"), Optional.empty());
        ProcessOptions.Producer back =
                ProcessOptions.producer(ProcessOptions.args(p).toArray(String[]::new));
        assertEquals(RUN, back.run());
        assertArrayEquals(p.checkpoints(), back.checkpoints());
        assertEquals(p.transports(), back.transports());
        assertEquals(Optional.empty(), back.online());

        ProcessOptions.Run pfs = new ProcessOptions.Run(
                400,
                40,
                1,
                4000,
                "embedded://127.0.0.1:0",
                Optional.of(Path.of("/tmp/pfs")),
                DemoWorkload.STATIONARY,
                DemoTransport.PFS);
        ProcessOptions.Producer none = ProcessOptions.producer(
                ProcessOptions.args(new ProcessOptions.Producer(pfs, new long[0], List.of(), Optional.empty()))
                        .toArray(String[]::new));
        assertEquals(pfs, none.run());
        assertEquals(0, none.checkpoints().length);
        assertEquals(List.of(), none.transports());
    }

    @Test
    void theOnlinePolicysSettingsSurviveTheCommandLineExactly() {
        OnlineCheckpointPolicy.Config c =
                new OnlineCheckpointPolicy.Config(200, 2000, 45, 0.005 / 0.0025, 4, 0.6123456789, 5, 0.03, 90, 450);
        ProcessOptions.Online online = new ProcessOptions.Online(c, 0.0005, 0.0213, 0.0025);
        ProcessOptions.Producer p =
                new ProcessOptions.Producer(RUN, new long[0], List.of("tcp://127.0.0.1:0"), Optional.of(online));
        assertEquals(
                online,
                ProcessOptions.producer(ProcessOptions.args(p).toArray(String[]::new))
                        .online()
                        .orElseThrow());
        List<String> bad = new ArrayList<>(
                ProcessOptions.args(new ProcessOptions.Producer(RUN, new long[0], List.of(), Optional.empty())));
        bad.addAll(List.of("--online", "budget=3"));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ProcessOptions.producer(bad.toArray(String[]::new)));
        assertTrue(
                e.getMessage().startsWith("DemoProducer: --online needs every one of budget, spacing"), e.getMessage());
    }

    @Test
    void consumerOptionsSurviveTheCommandLine() {
        ProcessOptions.Consumer c = new ProcessOptions.Consumer(RUN, 400.0, List.of("ucx", "tcp"), 8);
        assertEquals(c, ProcessOptions.consumer(ProcessOptions.args(c).toArray(String[]::new)));
    }

    @Test
    void badArgumentsNameTheOption() {
        List<String> args =
                new ArrayList<>(ProcessOptions.args(new ProcessOptions.Consumer(RUN, 400.0, List.of("tcp"), 1)));
        args.addAll(List.of("--checkpoints", "10"));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> ProcessOptions.consumer(args.toArray(String[]::new)));
        assertTrue(e.getMessage().startsWith("DemoConsumer: unknown option --checkpoints"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class, () -> ProcessOptions.producer(new String[] {"--iterations", "10"}));
        assertTrue(e.getMessage().contains("is required"), e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> ProcessOptions.producer(ProcessOptions.args(
                                new ProcessOptions.Producer(RUN, new long[] {300, 250}, List.of(), Optional.empty()))
                        .toArray(String[]::new)));
        assertTrue(e.getMessage().contains("--checkpoints must increase"), e.getMessage());
        List<String> transport =
                new ArrayList<>(ProcessOptions.args(new ProcessOptions.Consumer(RUN, 400.0, List.of("tcp"), 1)));
        transport.set(transport.indexOf("--transport") + 1, "carrier-pigeon");
        e = assertThrows(
                IllegalArgumentException.class, () -> ProcessOptions.consumer(transport.toArray(String[]::new)));
        assertEquals(
                "demo process: --transport carrier-pigeon: not inline, host (or ucx), tcp, pfs (or file)",
                e.getMessage());
    }
}
