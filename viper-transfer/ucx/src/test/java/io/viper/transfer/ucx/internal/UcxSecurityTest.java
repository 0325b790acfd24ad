package io.viper.transfer.ucx.internal;

import static io.viper.testing.HostilePeers.readsExactly;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.net.LocalSockets;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.testing.TestSecrets;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.testing.TransportSecuritySuite;
import io.viper.transfer.ucx.UcxTransportProvider;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The ucx control port with credentials and limits (the transport security suite), and a hostile process answering a
 * consumer with a forged GRANT: nothing it sends reaches UCX (which would abort this JVM) unless it proved the
 * consumer's secret or runs as the consumer's own user.
 */
class UcxSecurityTest extends TransportSecuritySuite {
    private final UcxTransportProvider provider = new UcxTransportProvider();

    @BeforeEach
    void needsUcx() {
        var reason = provider.unavailableReason();
        Assumptions.assumeTrue(reason.isEmpty(), () -> "ucx unavailable: " + reason.orElse(""));
    }

    @Override
    protected TransportProvider provider() {
        return provider;
    }

    @Override
    protected byte[] prelude() {
        return ByteBuffer.allocate(4).putInt(ControlProtocol.MAGIC).array();
    }

    @Override
    protected byte[] leaseRequest(String model) {
        ByteBuffer lease = ControlProtocol.lease(model, 1);
        return ByteBuffer.allocate(4 + lease.remaining())
                .putInt(ControlProtocol.MAGIC)
                .put(lease)
                .array();
    }

    @Test
    void aForgedGrantNeverReachesUcx() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("victim", 1, 9, 64_000);
                TransportServer real = provider.openServer(
                        URI.create("ucx://127.0.0.1:0"), ViperConfig.of(secrets.producerSetting()));
                TransportClient consumer = provider.openClient(ViperConfig.of(secrets.consumerSetting()))) {
            real.expose(staged);
            Process forger = forger(false, staged.manifest().totalBytes());
            try {
                Location forged = new Location(URI.create("ucx://127.0.0.1:" + port(forger)), Tier.HOST);
                ViperConfigException e =
                        assertThrows(ViperConfigException.class, () -> readsExactly(consumer, forged, staged));
                assertTrue(e.getMessage().contains("does not authenticate"), e.getMessage());
                readsExactly(consumer, real.location(), staged); // this JVM is alive and reads on
            } finally {
                forger.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        if (LocalSockets.ownUid() == 0 && Files.isExecutable(Path.of("/usr/bin/setpriv"))) {
            // Without secrets on either side: a forger running as another user is not trusted either.
            try (TestStagedCheckpoint staged = new TestStagedCheckpoint("victim", 2, 9, 64_000);
                    TransportClient consumer =
                            provider.openClient(ViperConfig.of(Map.of("viper.auth.user.secret", "off")))) {
                Process forger = forger(true, staged.manifest().totalBytes());
                try {
                    Location forged = new Location(URI.create("ucx://127.0.0.1:" + port(forger)), Tier.HOST);
                    ViperConfigException e =
                            assertThrows(ViperConfigException.class, () -> readsExactly(consumer, forged, staged));
                    assertTrue(e.getMessage().contains("is run by user 65534"), e.getMessage());
                } finally {
                    forger.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    /** Starts {@link ForgedGrantServer} in a JVM of its own, as user nobody when {@code asNobody}. */
    private static Process forger(boolean asNobody, long size) throws Exception {
        List<String> cmd = new ArrayList<>();
        if (asNobody) {
            cmd.addAll(List.of("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"));
        }
        String classes = Path.of(ForgedGrantServer.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI())
                .toString();
        cmd.addAll(List.of(
                ProcessHandle.current().info().command().orElseThrow(),
                "-cp",
                classes,
                ForgedGrantServer.class.getName(),
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
