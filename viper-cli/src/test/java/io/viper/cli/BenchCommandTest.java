package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.viper.spi.Providers;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code viper bench} refuses bad flags and unusable paths with one line and exit code 2, before measuring anything.
 */
class BenchCommandTest {
    static void refused(String expected, String... args) {
        InspectCommandTest.Run r;
        try (StderrCapture stderr = new StderrCapture()) {
            r = InspectCommandTest.run(args);
            assertEquals("", stderr.text(), "refused before anything ran: no progress, no log records");
        }
        assertEquals(2, r.exit(), r.err());
        List<String> lines = r.errLines();
        assertEquals(1, lines.size(), r.err());
        assertTrue(lines.getFirst().startsWith("viper: ") && lines.getFirst().contains(expected), lines.getFirst());
        assertEquals("", r.out());
    }

    @Test
    void gpuPathWithoutCudaSaysWhyInOneLine() {
        assumeTrue(
                Providers.transport("cuda-ipc")
                        .orElseThrow()
                        .unavailableReason()
                        .isPresent(),
                "CUDA works here: the gpu path would run");
        refused("--paths gpu: no CUDA driver/device: ", "bench", "transfer", "--paths", "gpu", "--size", "1m");
        refused(
                "--paths gpu-pipe: no CUDA driver/device: ",
                "bench",
                "transfer",
                "--paths",
                "tcp,gpu-pipe",
                "--size",
                "1m");
    }

    @Test
    void pathsAreTheNamesOfTransferPathWithItsAliases() {
        refused(
                "--paths: unknown path 'nvme' (accepted: inline, host (or ucx), tcp, pfs (or file), gpu (or cuda-ipc),"
                        + " gpu-pipe (or cuda-pipe))",
                "bench",
                "transfer",
                "--paths",
                "host,nvme");
        // The demo's names and the cost model's pass --paths: the run stops at the next flag checked, --plot.
        refused(
                "--plot out.jpg: the file name must end in .png or .svg",
                "bench",
                "transfer",
                "--size",
                "1m",
                "--paths",
                "inline,UCX,tcp,file,host,pfs",
                "--plot",
                "out.jpg");
    }

    @Test
    void badFlagsAreRefused() {
        refused("--paths: unknown path 'nvme'", "bench", "transfer", "--paths", "host,nvme");
        refused("--size 100 is too small", "bench", "transfer", "--size", "100");
        refused("--size: 'abc' is not a byte size", "bench", "transfer", "--size", "abc");
        refused(
                "--paths '': no path (use inline, host (or ucx), tcp, pfs (or file), gpu (or cuda-ipc), gpu-pipe (or"
                        + " cuda-pipe))",
                "bench",
                "transfer",
                "--size",
                "16k",
                "--paths",
                "");
        refused("--paths 'tcp,,host': an empty entry", "bench", "transfer", "--size", "16k", "--paths", "tcp,,host");
        refused("--paths 'tcp,': an empty entry", "bench", "transfer", "--size", "16k", "--paths", "tcp,");
        refused(
                "--block-bytes: invalid value '3' for viper.block.bytes: must be 0 (no blocks) or from 4k to 1g",
                "bench",
                "transfer",
                "--size",
                "16k",
                "--block-bytes",
                "3");
        refused("--repeat 0 must be between 1 and 1000", "bench", "transfer", "--repeat", "0");
        refused(
                "--interval 61000 ms must be between 0 and 60000 ms",
                "bench",
                "transfer",
                "--size",
                "1m",
                "--interval",
                "61s");
        refused("'-5ms' is not a duration", "bench", "transfer", "--size", "1m", "--interval", "-5ms");
        refused("--sizes 16k,4k: sizes must grow from left to right", "bench", "transfer", "--sizes", "16k,4k");
        refused("--sizes: 100 is too small (at least 1k)", "bench", "transfer", "--sizes", "16k,100");
        refused("--size and --sizes: give one of them", "bench", "transfer", "--size", "1m", "--sizes", "16k,1m");
        refused(
                "--plot out.jpg: the file name must end in .png or .svg",
                "bench",
                "transfer",
                "--size",
                "1m",
                "--plot",
                "out.jpg");
        refused(
                "--producer-config viper.block.bytes: the bench sets it for each path and size (use --block-bytes)",
                "bench",
                "transfer",
                "--size",
                "1m",
                "--producer-config",
                "viper.block.bytes=0");
        refused(
                "unknown configuration key viper.producer.copy.thread (did you mean viper.producer.copy.threads?)",
                "bench",
                "transfer",
                "--size",
                "1m",
                "--producer-config",
                "viper.producer.copy.thread=2");
        refused(
                "--producer-config: invalid value '0' for viper.producer.copy.threads",
                "bench",
                "transfer",
                "--size",
                "1m",
                "--producer-config",
                "viper.producer.copy.threads=0");
        refused(
                "--consumer-config viper.consumer.paths: the bench sets it for each path and size",
                "bench",
                "transfer",
                "--size",
                "1m",
                "--consumer-config",
                "viper.consumer.paths=tcp");
        refused(
                "unknown configuration key viper.ucx.maped (did you mean viper.ucx.mapped?)",
                "bench",
                "transfer",
                "--size",
                "1m",
                "--consumer-config",
                "viper.ucx.maped=false");
    }

    @Test
    void aModelTheMachineCannotHoldIsRefused() {
        // No machine has 8000 TiB of memory: the bench would fail on its first allocation, or swap.
        refused(
                "--size 1000t: the bench needs about 8 x 1000t of memory (the model, its memcpy's target, 4 staging"
                        + " and 2 receive buffers),"
                        + " this machine has ",
                "bench",
                "transfer",
                "--size",
                "1000t");
        refused(
                "--sizes 1000t: the bench needs about 8 x 1000t of memory",
                "bench",
                "transfer",
                "--sizes",
                "16k,1000t");
        refused(
                "--size 1000t: the bench needs about 4 x 1000t of memory (the model and 3 staging buffers), this"
                        + " machine has ",
                "bench",
                "repository",
                "--size",
                "1000t");
    }

    @Test
    void repositoryFlagsAreRefusedBeforeTheRepositoryIsMade(@TempDir Path dir) {
        Path repo = dir.resolve("repo");
        refused(
                "--block-bytes: invalid value '3' for viper.block.bytes",
                "bench",
                "repository",
                "--size",
                "16k",
                "--block-bytes",
                "3",
                "--dir",
                repo.toString());
        refused(
                "--changed 0%: must be above 0% and at most 100%",
                "bench", "repository", "--size", "16k", "--changed", "0%", "--dir", repo.toString());
        refused("--size: 'abc' is not a byte size", "bench", "repository", "--size", "abc", "--dir", repo.toString());
        assertFalse(Files.exists(repo));
    }

    @Test
    void aDirThatIsAFileIsRefused(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("file"), "x");
        refused(
                "--dir " + file + ": not a directory",
                "bench",
                "transfer",
                "--size",
                "16k",
                "--paths",
                "tcp",
                "--dir",
                file.toString());
        refused(
                "--dir " + file + ": not a directory",
                "bench",
                "repository",
                "--size",
                "16k",
                "--dir",
                file.toString());
    }
}
