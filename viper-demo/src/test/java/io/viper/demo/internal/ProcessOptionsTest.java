package io.viper.demo.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** What the driver writes on a process's command line, the process reads back. */
class ProcessOptionsTest {
    static final ProcessOptions.Run RUN = new ProcessOptions.Run(2000, 200, -7, 5000, "embedded://127.0.0.1:0", Optional.empty());

    @Test
    void producerOptionsSurviveTheCommandLine() {
        ProcessOptions.Producer p = new ProcessOptions.Producer(RUN, new long[] {240, 280}, List.of("ucx://127.0.0.1:0", "tcp://127.0.0.1:0"));
        ProcessOptions.Producer back = ProcessOptions.producer(ProcessOptions.args(p).toArray(String[]::new));
        assertEquals(RUN, back.run());
        assertArrayEquals(p.checkpoints(), back.checkpoints());
        assertEquals(p.transports(), back.transports());

        ProcessOptions.Run pfs = new ProcessOptions.Run(400, 40, 1, 4000, "embedded://127.0.0.1:0", Optional.of(Path.of("/tmp/pfs")));
        ProcessOptions.Producer none = ProcessOptions.producer(ProcessOptions.args(new ProcessOptions.Producer(pfs, new long[0], List.of()))
                .toArray(String[]::new));
        assertEquals(pfs, none.run());
        assertEquals(0, none.checkpoints().length);
        assertEquals(List.of(), none.transports());
    }

    @Test
    void consumerOptionsSurviveTheCommandLine() {
        ProcessOptions.Consumer c = new ProcessOptions.Consumer(RUN, 400.0, List.of("ucx", "tcp"));
        assertEquals(c, ProcessOptions.consumer(ProcessOptions.args(c).toArray(String[]::new)));
    }

    @Test
    void badArgumentsNameTheOption() {
        List<String> args = new ArrayList<>(ProcessOptions.args(new ProcessOptions.Consumer(RUN, 400.0, List.of("tcp"))));
        args.addAll(List.of("--checkpoints", "10"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ProcessOptions.consumer(args.toArray(String[]::new)));
        assertTrue(e.getMessage().startsWith("DemoConsumer: unknown option --checkpoints"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ProcessOptions.producer(new String[] {"--iterations", "10"}));
        assertTrue(e.getMessage().contains("is required"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> ProcessOptions.producer(
                ProcessOptions.args(new ProcessOptions.Producer(RUN, new long[] {300, 250}, List.of())).toArray(String[]::new)));
        assertTrue(e.getMessage().contains("--checkpoints must increase"), e.getMessage());
    }
}
