package io.viper.transfer.tcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportServer;
import io.viper.testing.HostilePeers;
import io.viper.testing.TestCertificates;
import io.viper.testing.TestSecrets;
import io.viper.testing.TestStagedCheckpoint;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code tcp://} port with credentials, TLS and limits: a peer without the secret gets the
 * challenge and nothing else; a consumer token reads; TLS carries the bytes and refuses an untrusted
 * server; hostile peers are closed while good clients are served; a server beyond loopback needs a
 * secret.
 */
class TcpSecurityTest {
    private static final Map<String, String> SHORT_LIMITS = Map.of("viper.limits.handshake.ms", "1000", "viper.limits.idle.ms", "1000",
            "viper.limits.connections.per.peer", "8", "viper.transfer.timeout.ms", "10000");

    private final TcpTransportProvider provider = new TcpTransportProvider();

    @TempDir
    Path dir;

    private static ViperConfig config(Map<String, String> a, Map<String, String> b) {
        Map<String, String> all = new HashMap<>(a);
        all.putAll(b);
        return ViperConfig.of(all);
    }

    /** Reads all of {@code staged} through {@code client} and checks every byte. */
    private static void readsExactly(TransportClient client, TransportServer server, TestStagedCheckpoint staged) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(staged.manifest().totalBytes());
            client.read(staged.manifest(), server.location(), List.of(new ByteRange(0, dst.byteSize(), 0)), dst);
            assertEquals(-1, staged.data().mismatch(dst), "byte-identical");
        }
    }

    private static byte[] leaseFrame(String model) {
        byte[] m = model.getBytes();
        return java.nio.ByteBuffer.allocate(4 + 2 + 10 + m.length).putInt(2 + 10 + m.length).put((byte) 1).put((byte) 1).putLong(1)
                .putShort((short) m.length).put(m).array();
    }

    @Test
    void withASecretAPeerWithoutItGetsNothingAndAConsumerTokenReads() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("secret-model", 1, 5, 300_000);
             TransportServer server = provider.openServer(URI.create("tcp://127.0.0.1:0"), ViperConfig.of(secrets.producerSetting()));
             TransportClient withToken = provider.openClient(ViperConfig.of(secrets.consumerSetting()));
             TransportClient without = provider.openClient(ViperConfig.defaults())) {
            server.expose(staged);
            readsExactly(withToken, server, staged);
            ViperConfigException e = assertThrows(ViperConfigException.class, () -> readsExactly(without, server, staged));
            assertTrue(e.getMessage().contains("requires credentials: set viper.auth.secret.file"), e.getMessage());
            URI u = server.location().uri();
            List<String> report = HostilePeers.strangerGetsOnlyTheChallenge(new HostilePeers.Target(u.getHost(), u.getPort(), "tcp", new byte[0],
                    () -> readsExactly(withToken, server, staged), 64), leaseFrame("secret-model"));
            assertEquals(3, report.size(), report.toString());
        }
    }

    @Test
    void hostilePeersAreClosedAndGoodClientsServed() throws Exception {
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("hostile", 1, 6, 100_000);
             TransportServer server = provider.openServer(URI.create("tcp://127.0.0.1:0"), ViperConfig.of(SHORT_LIMITS));
             TransportClient client = provider.openClient(ViperConfig.of(SHORT_LIMITS))) {
            server.expose(staged);
            URI u = server.location().uri();
            List<String> report = HostilePeers.tryAll(new HostilePeers.Target(u.getHost(), u.getPort(), "tcp", new byte[0],
                    () -> readsExactly(client, server, staged), 8));
            assertEquals(12, report.size(), report.toString());
            assertEquals(0, staged.openLeases());
        }
    }

    @Test
    void tlsCarriesTheBytesAndAnUntrustedServerIsRefused() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        TestCertificates server = TestCertificates.make(dir, "server");
        TestCertificates stranger = TestCertificates.make(dir, "stranger");
        Map<String, String> tls = Map.of("viper.tls.enabled", "true", "viper.tls.cert.file", server.cert().toString(),
                "viper.tls.key.file", server.key().toString(), "viper.tls.trust.file", server.cert().toString(), "viper.limits.handshake.ms", "1000");
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("tls", 1, 7, 5_000_000);
             TransportServer srv = provider.openServer(URI.create("tcp://127.0.0.1:0"), config(tls, secrets.producerSetting()));
             TransportClient client = provider.openClient(config(tls, secrets.consumerSetting()));
             TransportClient plain = provider.openClient(ViperConfig.of(secrets.consumerSetting()));
             TransportClient trustsOther = provider.openClient(config(Map.of("viper.tls.enabled", "true",
                     "viper.tls.trust.file", stranger.cert().toString()), secrets.consumerSetting()))) {
            srv.expose(staged);
            readsExactly(client, srv, staged);
            readsExactly(client, srv, staged); // a pooled TLS connection again
            assertThrows(ViperException.class, () -> readsExactly(plain, srv, staged), "a client without TLS gets no handshake from a TLS server");
            ViperException untrusted = assertThrows(ViperException.class, () -> readsExactly(trustsOther, srv, staged));
            assertTrue(untrusted.getMessage().contains("cannot connect"), untrusted.getMessage());
        }
    }

    @Test
    void aServerBeyondLoopbackNeedsASecret() {
        ViperConfigException e = assertThrows(ViperConfigException.class,
                () -> provider.openServer(URI.create("tcp://0.0.0.0:0"), ViperConfig.defaults()).close());
        assertTrue(e.getMessage().startsWith("tcp server on 0.0.0.0: viper.auth.secret.file is not set"), e.getMessage());
    }
}
