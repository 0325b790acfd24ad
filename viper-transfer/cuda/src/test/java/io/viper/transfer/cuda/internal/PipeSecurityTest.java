package io.viper.transfer.cuda.internal;

import static io.viper.testing.HostilePeers.readsExactly;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.auth.ClientAuth;
import io.viper.auth.Role;
import io.viper.errors.ViperConfigException;
import io.viper.spi.TransportClient;
import io.viper.testing.HostilePeers;
import io.viper.testing.TestSecrets;
import io.viper.testing.TestStagedCheckpoint;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The GPU transports' control port (cuda-pipe's, whose host path runs without a GPU) with credentials and limits: a
 * peer without the secret gets the challenge only; hostile peers are closed while good consumers are served.
 */
class PipeSecurityTest {
    private static final URI BIND = URI.create("cuda-pipe://127.0.0.1:0");

    @TempDir
    Path dir;

    @Test
    void withASecretAPeerWithoutItGetsNothingAndAConsumerTokenReads() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("secret-model", 1, 3, 200_000);
                PipeServer server = new PipeServer(BIND, ViperConfig.of(secrets.producerSetting()));
                PipeClient withToken = new PipeClient(
                        10_000, ClientAuth.of(ViperConfig.of(secrets.consumerSetting()), Role.CONSUMER));
                PipeClient without = new PipeClient(10_000, ClientAuth.of(Optional.empty(), Role.CONSUMER))) {
            server.expose(staged);
            readsExactly(withToken, server.location(), staged);
            ViperConfigException e =
                    assertThrows(ViperConfigException.class, () -> readsExactly(without, server.location(), staged));
            assertTrue(e.getMessage().contains("requires credentials"), e.getMessage());
            assertTrue(
                    TransportClient.refusesConsumer(e),
                    "a refusal of credentials, which a consumer does not retry: " + e);
            URI u = server.location().uri();
            byte[] request = ByteBuffer.allocate(12)
                    .putInt(Wire.MAGIC)
                    .putInt(4)
                    .putInt(0x01000000)
                    .array();
            List<String> report = HostilePeers.strangerGetsOnlyTheChallenge(
                    new HostilePeers.Target(
                            u.getHost(),
                            u.getPort(),
                            "cuda-pipe",
                            new byte[0],
                            () -> readsExactly(withToken, server.location(), staged),
                            64),
                    request);
            assertEquals(3, report.size());
        }
    }

    @Test
    void hostilePeersAreClosedAndGoodClientsServed() throws Exception {
        ViperConfig limits = ViperConfig.of(HostilePeers.SHORT_LIMITS);
        try (TestStagedCheckpoint staged = new TestStagedCheckpoint("hostile", 1, 4, 100_000);
                PipeServer server = new PipeServer(BIND, limits);
                PipeClient client = new PipeClient(10_000, ClientAuth.of(ViperConfig.defaults(), Role.CONSUMER))) {
            server.expose(staged);
            URI u = server.location().uri();
            List<String> report = HostilePeers.tryAll(new HostilePeers.Target(
                    u.getHost(),
                    u.getPort(),
                    "cuda-pipe",
                    ByteBuffer.allocate(4).putInt(Wire.MAGIC).array(),
                    () -> readsExactly(client, server.location(), staged),
                    8));
            assertEquals(12, report.size(), report.toString());
        }
    }
}
