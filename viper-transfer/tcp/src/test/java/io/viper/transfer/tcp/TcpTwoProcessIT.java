package io.viper.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Producer and consumer in two JVMs: a child process serves a 256 MiB staged checkpoint over {@code tcp://}, this
 * process reads it, checks every byte and prints the throughput; then the child is killed and the next read fails
 * retriably and at once.
 */
class TcpTwoProcessIT {
    private static final long BYTES = 256L * 1024 * 1024;
    private static final long SEED = 2026;

    @Test
    void readCheckpointFromAnotherProcess() throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current()
                .info()
                .command()
                .orElse(System.getProperty("java.home") + File.separator + "bin" + File.separator + "java"));
        cmd.add("-Xmx256m");
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(TcpServeMain.class.getName());
        cmd.add(Long.toString(BYTES));
        cmd.add(Long.toString(SEED));
        Process child = new ProcessBuilder(cmd)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        try (TestStagedCheckpoint expected = new TestStagedCheckpoint("it", 1, SEED, BYTES / 2, BYTES - BYTES / 2);
                TransportClient client = new TcpTransportProvider().openClient(ViperConfig.defaults());
                Arena arena = Arena.ofShared()) {
            BufferedReader out =
                    new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            assertNotNull(line, "the child printed its location");
            assertTrue(line.startsWith("LOCATION "), line);
            Location loc =
                    new Location(URI.create(line.substring("LOCATION ".length()).trim()), Tier.HOST);
            MemorySegment dst = arena.allocate(BYTES, 64);
            List<ByteRange> whole = List.of(new ByteRange(0, BYTES, 0));

            client.read(expected.manifest(), loc, whole, dst); // warm-up
            assertEquals(-1, expected.data().mismatch(dst), "bytes of the warm-up read");
            int rounds = 5;
            double best = 0;
            double sum = 0;
            for (int i = 0; i < rounds; i++) {
                dst.fill((byte) 0);
                long t0 = System.nanoTime();
                client.read(expected.manifest(), loc, whole, dst);
                double s = (System.nanoTime() - t0) / 1e9;
                assertEquals(-1, expected.data().mismatch(dst), "bytes of read " + i);
                double gbs = BYTES / s / 1e9;
                best = Math.max(best, gbs);
                sum += gbs;
            }
            System.out.printf(
                    Locale.ROOT,
                    "tcp two-process read of 256 MiB: mean %.2f GB/s, best %.2f GB/s over %d reads%n",
                    sum / rounds,
                    best,
                    rounds);

            child.destroyForcibly();
            assertTrue(child.waitFor(10, TimeUnit.SECONDS), "child exited");
            long t0 = System.nanoTime();
            assertThrows(RetriableViperException.class, () -> client.read(expected.manifest(), loc, whole, dst));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertTrue(ms < 2000, "a dead producer is detected at once, took " + ms + " ms");
        } finally {
            child.destroyForcibly();
            child.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
