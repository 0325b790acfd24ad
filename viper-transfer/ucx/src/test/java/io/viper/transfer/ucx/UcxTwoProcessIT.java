package io.viper.transfer.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The producer in a second JVM ({@link UcxPeerProcess}); this JVM reads from it over UCX. Prints the measured GET
 * bandwidth next to an in-process memcpy of the same size, and the UCX lanes a third process (run with
 * {@code UCX_LOG_LEVEL=info}) used. Size: {@code -Dviper.ucx.it.mib} (default 256).
 */
class UcxTwoProcessIT {
    private static final long SEED = 42;
    private final List<Process> children = new ArrayList<>();

    @BeforeEach
    void requireUcx() {
        var reason = new UcxTransportProvider().unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "ucx unavailable: " + reason.orElse(""));
    }

    @AfterEach
    void stopChildren() throws InterruptedException {
        for (Process p : children) {
            try {
                p.getOutputStream().close();
            } catch (IOException ignored) {
                // already gone
            }
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void readsFromAnotherProcessOverSharedMemory() throws Exception {
        long bytes = Long.getLong("viper.ucx.it.mib", 256) << 20;
        Process producer = start(Map.of(), "serve", Long.toString(bytes), Long.toString(SEED));
        URI location = awaitLocation(producer);
        double getGbps;
        double firstGbps = 0;
        double memcpyGbps = 0;
        try (TestStagedCheckpoint expected = new TestStagedCheckpoint("it", 1, SEED, bytes);
                Arena arena = Arena.ofShared();
                TransportClient client = new UcxTransportProvider().openClient(ViperConfig.defaults())) {
            MemorySegment dst = arena.allocate(bytes, 4096);
            dst.fill((byte) 0);
            getGbps = 0;
            for (int i = 0; i < 3; i++) {
                long t0 = System.nanoTime();
                client.read(
                        expected.manifest(),
                        new Location(location, Tier.HOST),
                        List.of(new ByteRange(0, bytes, 0)),
                        dst);
                double gbps = bytes / (double) (System.nanoTime() - t0);
                if (i == 0) {
                    firstGbps = gbps;
                }
                getGbps = Math.max(getGbps, gbps);
                assertEquals(-1, expected.data().mismatch(dst), "bytes read from the other process");
                dst.fill((byte) 0);
            }
            for (int i = 0; i < 3; i++) {
                long t0 = System.nanoTime();
                MemorySegment.copy(expected.data(), 0, dst, 0, bytes);
                memcpyGbps = Math.max(memcpyGbps, bytes / (double) (System.nanoTime() - t0));
            }
        }
        System.out.printf(
                "ucx two-process GET of %d MiB: %.2f GB/s (best of 3; first read, which attaches the producer's"
                        + " memory: %.2f GB/s);"
                        + " in-process memcpy (MemorySegment.copy) of %d MiB: %.2f GB/s%n",
                bytes >> 20, getGbps, firstGbps, bytes >> 20, memcpyGbps);

        // Which UCX lanes two processes on this host use: a third process reads with UCX's info log on.
        Process reader = start(
                Map.of("UCX_LOG_LEVEL", "info"),
                "read",
                location.toString(),
                Long.toString(bytes),
                Long.toString(SEED),
                "1");
        String out = new String(reader.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(reader.waitFor(120, TimeUnit.SECONDS), "reader process finished");
        assertEquals(0, reader.exitValue(), () -> "reader process failed:\n" + out);
        String lanes = out.lines().filter(l -> l.contains("ep_cfg")).findFirst().orElse(null);
        assertNotNull(lanes, () -> "UCX printed no endpoint configuration:\n" + out);
        String config = lanes.substring(lanes.indexOf("ep_cfg"));
        System.out.println("ucx lanes between two processes: " + config);
        assertTrue(config.matches(".*\\b(posix|sysv|cma|xpmem)/.*"), "shared-memory transport in " + config);
        assertFalse(config.contains("tcp/"), "no tcp lane in " + config);
        // Software RMA emulation (registered application memory) runs at a few percent of memcpy speed.
        assertTrue(
                getGbps > 0.1 * memcpyGbps,
                String.format("GET %.2f GB/s is far below memcpy %.2f GB/s", getGbps, memcpyGbps));
    }

    @Test
    void producerKilledDuringReadsFailsRetriablyAndQuickly() throws Exception {
        long bytes = 64L << 20;
        Process producer = start(Map.of(), "serve", Long.toString(bytes), Long.toString(SEED));
        URI location = awaitLocation(producer);
        try (TestStagedCheckpoint expected = new TestStagedCheckpoint("it", 1, SEED, bytes);
                Arena arena = Arena.ofShared();
                TransportClient client = new UcxTransportProvider()
                        .openClient(ViperConfig.of(Map.of("viper.transfer.timeout.ms", "20000")))) {
            MemorySegment dst = arena.allocate(bytes, 4096);
            Location loc = new Location(location, Tier.HOST);
            List<ByteRange> whole = List.of(new ByteRange(0, bytes, 0));
            client.read(expected.manifest(), loc, whole, dst);
            CompletableFuture<Void> killer = CompletableFuture.runAsync(() -> {
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                producer.destroyForcibly();
            });
            long failedAt = 0;
            for (int i = 0; i < 10_000 && failedAt == 0; i++) {
                try {
                    client.read(expected.manifest(), loc, whole, dst);
                    assertEquals(-1, expected.data().mismatch(dst), "a read that completed has exact bytes");
                } catch (RetriableViperException e) {
                    failedAt = System.nanoTime();
                }
            }
            killer.join();
            assertTrue(failedAt != 0, "reads fail once the producer is killed");
            producer.waitFor(10, TimeUnit.SECONDS);
            long t0 = System.nanoTime();
            try {
                client.read(expected.manifest(), loc, whole, dst);
                fail("read from a dead producer succeeded");
            } catch (RetriableViperException expectedFailure) {
                assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5), "failure is quick");
            }
        }
    }

    private Process start(Map<String, String> env, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(UcxPeerProcess.class.getName());
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        children.add(p);
        return p;
    }

    private static URI awaitLocation(Process producer) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(producer.getInputStream(), StandardCharsets.UTF_8));
        CompletableFuture<URI> loc = CompletableFuture.supplyAsync(() -> {
            try {
                StringBuilder seen = new StringBuilder();
                for (String line; (line = r.readLine()) != null; ) {
                    if (line.startsWith("LOCATION ")) {
                        return URI.create(line.substring(9).strip());
                    }
                    seen.append(line).append('\n');
                }
                throw new IllegalStateException("producer exited without a location:\n" + seen);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        URI uri = loc.get(120, TimeUnit.SECONDS);
        // Keep draining its output so that it never blocks on a full pipe.
        Thread.ofVirtual().start(() -> {
            try {
                r.transferTo(Writer.nullWriter());
            } catch (IOException ignored) {
                // child gone
            }
        });
        return uri;
    }
}
