package io.viper.faults;

import static io.viper.testing.HostilePeers.readsExactly;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.net.LocalSockets;
import io.viper.spi.TransportClient;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.transfer.ucx.UcxTransportProvider;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 39's case 3: another user's fake ucx producer, whose listener comes and goes every 2 ms, answers a consumer's
 * LEASE with a GRANT whose worker address is garbage, which UCX would abort this JVM on. Nothing it sends reaches UCX:
 * by default the consumer requires the producer to prove this user's secret; without any secret, it checks the user at
 * the other end of the very connection it reads from. Needs UCX, and root with {@code setpriv} to run the forger as
 * user nobody.
 */
class UcxForgeryIT {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void case3AFlappingForgerNeverReachesUcx() throws Exception {
        Optional<String> ucx = new UcxTransportProvider().unavailableReason();
        Assumptions.assumeTrue(ucx.isEmpty(), () -> "ucx unavailable: " + ucx.orElse(""));
        Assumptions.assumeTrue(
                LocalSockets.ownUid() == 0 && Files.isExecutable(Path.of("/usr/bin/setpriv")),
                "running the forger as another user needs root and /usr/bin/setpriv");
        Process forger = forger(1 << 16);
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("victim", 1, 9, 1 << 16)) {
            Location forged = new Location(URI.create("ucx://127.0.0.1:" + port(forger)), Tier.HOST);
            for (int round = 0; round < 20; round++) {
                try (TransportClient byDefault = new UcxTransportProvider().openClient(ViperConfig.defaults());
                        TransportClient none = new UcxTransportProvider()
                                .openClient(ViperConfig.of(Map.of("viper.auth.user.secret", "off")))) {
                    String e = refusal(byDefault, forged, staged);
                    assertTrue(e.contains("does not authenticate"), e);
                    String e2 = refusal(none, forged, staged);
                    assertTrue(e2.contains("is run by"), e2);
                    if (round == 0) {
                        System.out.println("fault: case 3: by default: " + e);
                        System.out.println("fault: case 3: without any secret: " + e2);
                    }
                }
            }
            System.out.println("fault: case 3: 20 rounds against a listener flapping every 2 ms; this JVM is alive");
        } finally {
            forger.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** The refusal's message; a connection that found no listener at that moment is tried again. */
    private static String refusal(TransportClient client, Location forged, TestStagedCheckpoint staged)
            throws InterruptedException {
        for (int i = 0; ; i++) {
            try {
                readsExactly(client, forged, staged);
            } catch (ViperConfigException e) {
                return e.getMessage();
            } catch (RuntimeException e) {
                if (i > 500) {
                    throw e;
                }
                Thread.sleep(1);
                continue;
            }
            throw new AssertionError("the forger's bytes were read");
        }
    }

    private static Process forger(long size) throws Exception {
        String classes = Path.of(FlappingUcxForger.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI())
                .toString();
        List<String> cmd =
                new ArrayList<>(List.of("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"));
        cmd.addAll(List.of(
                ProcessHandle.current().info().command().orElseThrow(),
                "-cp",
                classes,
                FlappingUcxForger.class.getName(),
                Long.toString(size)));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    private static int port(Process p) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = r.readLine();
        assertTrue(line != null && line.startsWith("PORT "), "the forger said " + line);
        return Integer.parseInt(line.substring(5));
    }
}
