package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.spi.Providers;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code viper bench transfer} refuses bad flags and unusable paths with one line and exit code 2, before measuring anything. */
class BenchCommandTest {
    private static void refused(String expected, String... args) {
        InspectCommandTest.Run r = InspectCommandTest.run(args);
        assertEquals(2, r.exit(), r.err());
        List<String> lines = r.errLines();
        assertEquals(1, lines.size(), r.err());
        assertTrue(lines.getFirst().startsWith("viper: ") && lines.getFirst().contains(expected), lines.getFirst());
        assertEquals("", r.out());
    }

    @Test
    void gpuPathWithoutCudaSaysWhyInOneLine() {
        assumeTrue(Providers.transport("cuda-ipc").orElseThrow().unavailableReason().isPresent(), "CUDA works here: the gpu path would run");
        refused("--paths gpu: no CUDA driver/device: ", "bench", "transfer", "--paths", "gpu", "--size", "1m");
    }

    @Test
    void badFlagsAreRefused() {
        refused("--paths: unknown path 'nvme'", "bench", "transfer", "--paths", "host,nvme");
        refused("--size 100 is too small", "bench", "transfer", "--size", "100");
        refused("--repeat 0 must be between 1 and 1000", "bench", "transfer", "--repeat", "0");
    }
}
