package io.viper.testing;

import static io.viper.testing.HostilePeers.readsExactly;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every transport's port does with credentials and limits: with a secret, a peer without it gets the challenge and
 * nothing else while a consumer token reads byte-identical; without one, the {@link HostilePeers} are closed while good
 * clients are served; a server beyond loopback needs a secret. Subclasses name the transport.
 */
public abstract class TransportSecuritySuite {
    @TempDir
    protected Path dir;

    /** The provider under test. */
    protected abstract TransportProvider provider();

    /** What a client sends right after the handshake (the magic of the ucx and GPU channels), or nothing. */
    protected byte[] prelude() {
        return new byte[0];
    }

    /**
     * A request of the transport's protocol naming {@code model} v1, as a stranger would send it instead of the
     * handshake.
     */
    protected abstract byte[] leaseRequest(String model);

    private URI bind(String host) {
        return URI.create(provider().scheme() + "://" + host + ":0");
    }

    @Test
    protected void withASecretAPeerWithoutItGetsNothingAndAConsumerTokenReads() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("secret-model", 1, 5, 300_000);
                TransportServer server =
                        provider().openServer(bind("127.0.0.1"), ViperConfig.of(secrets.producerSetting()));
                TransportClient withToken = provider().openClient(ViperConfig.of(secrets.consumerSetting()));
                TransportClient without =
                        provider().openClient(ViperConfig.of(Map.of("viper.auth.user.secret", "off")))) {
            server.expose(staged);
            readsExactly(withToken, server.location(), staged);
            ViperConfigException e =
                    assertThrows(ViperConfigException.class, () -> readsExactly(without, server.location(), staged));
            assertTrue(e.getMessage().contains("requires credentials: set viper.auth.secret.file"), e.getMessage());
            assertTrue(
                    TransportClient.refusesConsumer(e),
                    "a refusal of credentials, which a consumer does not retry: " + e);
            URI u = server.location().uri();
            List<String> report = HostilePeers.strangerGetsOnlyTheChallenge(
                    new HostilePeers.Target(
                            u.getHost(),
                            u.getPort(),
                            provider().scheme(),
                            prelude(),
                            () -> readsExactly(withToken, server.location(), staged),
                            64),
                    leaseRequest("secret-model"));
            assertEquals(3, report.size(), report.toString());
        }
    }

    @Test
    protected void hostilePeersAreClosedAndGoodClientsServed() throws Exception {
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("hostile", 1, 6, 100_000);
                TransportServer server =
                        provider().openServer(bind("127.0.0.1"), ViperConfig.of(HostilePeers.SHORT_LIMITS));
                TransportClient client = provider().openClient(ViperConfig.of(HostilePeers.SHORT_LIMITS))) {
            server.expose(staged);
            URI u = server.location().uri();
            List<String> report = HostilePeers.tryAll(new HostilePeers.Target(
                    u.getHost(),
                    u.getPort(),
                    provider().scheme(),
                    prelude(),
                    () -> readsExactly(client, server.location(), staged),
                    8));
            assertEquals(12, report.size(), report.toString());
            assertEquals(0, staged.openLeases());
        }
    }

    @Test
    protected void aServerBeyondLoopbackNeedsASecret() {
        ViperConfigException e = assertThrows(
                ViperConfigException.class,
                () -> provider()
                        .openServer(bind("0.0.0.0"), ViperConfig.defaults())
                        .close());
        assertTrue(
                e.getMessage()
                        .startsWith(provider().scheme() + " server on 0.0.0.0: viper.auth.secret.file is not set"),
                e.getMessage());
    }
}
