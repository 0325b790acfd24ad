package io.viper.transfer.tcp;

import static io.viper.testing.HostilePeers.readsExactly;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.testing.TestCertificates;
import io.viper.testing.TestSecrets;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.testing.TransportSecuritySuite;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The {@code tcp://} port with credentials, TLS and limits: the transport security suite, and TLS carrying the bytes
 * while refusing a client without TLS and a server the client does not trust (that one for good: a consumer does not
 * retry it).
 */
class TcpSecurityTest extends TransportSecuritySuite {
    @Override
    protected TransportProvider provider() {
        return new TcpTransportProvider();
    }

    @Override
    protected byte[] leaseRequest(String model) {
        byte[] m = model.getBytes(UTF_8);
        return ByteBuffer.allocate(4 + 2 + 10 + m.length)
                .putInt(2 + 10 + m.length)
                .put((byte) 1)
                .put((byte) 1)
                .putLong(1)
                .putShort((short) m.length)
                .put(m)
                .array();
    }

    private static ViperConfig config(Map<String, String> a, Map<String, String> b) {
        Map<String, String> all = new HashMap<>(a);
        all.putAll(b);
        return ViperConfig.of(all);
    }

    @Test
    void tlsCarriesTheBytesAndAnUntrustedServerIsRefused() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        TestCertificates server = TestCertificates.make(dir, "server");
        TestCertificates stranger = TestCertificates.make(dir, "stranger");
        Map<String, String> tls = Map.of(
                "viper.tls.enabled",
                "true",
                "viper.tls.cert.file",
                server.cert().toString(),
                "viper.tls.key.file",
                server.key().toString(),
                "viper.tls.trust.file",
                server.cert().toString(),
                "viper.limits.handshake.ms",
                "1000");
        TransportProvider provider = provider();
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("tls", 1, 7, 5_000_000);
                TransportServer srv =
                        provider.openServer(URI.create("tcp://127.0.0.1:0"), config(tls, secrets.producerSetting()));
                TransportClient client = provider.openClient(config(tls, secrets.consumerSetting()));
                TransportClient plain = provider.openClient(ViperConfig.of(secrets.consumerSetting()));
                TransportClient trustsOther = provider.openClient(config(
                        Map.of(
                                "viper.tls.enabled",
                                "true",
                                "viper.tls.trust.file",
                                stranger.cert().toString()),
                        secrets.consumerSetting()))) {
            srv.expose(staged);
            readsExactly(client, srv.location(), staged);
            readsExactly(client, srv.location(), staged); // a pooled TLS connection again
            ViperException noTls = assertThrows(
                    ViperException.class,
                    () -> readsExactly(plain, srv.location(), staged),
                    "a client without TLS gets no handshake from a TLS server");
            assertFalse(TransportClient.refusesConsumer(noTls), "no handshake within the time is retried: " + noTls);
            ViperConfigException untrusted =
                    assertThrows(ViperConfigException.class, () -> readsExactly(trustsOther, srv.location(), staged));
            // both certificates name localhost: the stranger's signature is what does not check
            assertEquals(
                    "tcp read of tls v1 from " + srv.location().uri() + ": the producer's TLS certificate is refused: "
                            + "PKIX path validation failed: signature check failed",
                    untrusted.getMessage());
            assertTrue(
                    TransportClient.refusesConsumer(untrusted),
                    "a certificate this consumer does not trust is not retried");
        }
    }
}
