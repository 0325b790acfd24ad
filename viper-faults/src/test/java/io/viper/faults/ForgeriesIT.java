package io.viper.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperConsumer;
import io.viper.auth.Handshake;
import io.viper.auth.ManifestTrust;
import io.viper.auth.Role;
import io.viper.auth.Secret;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.notify.embedded.internal.NotifyProtocol;
import io.viper.testing.Ports;
import io.viper.testing.RawPeer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 39's forgeries, with nothing configured (this user's own secret, {@code viper.auth.user.secret=auto}): case 1,
 * a manifest assembled from versions the consumer holds (v1 announced again as a newer version); case 2, a forged
 * version 2^53-1. Each fails without signed manifests and the version limit.
 */
class ForgeriesIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final ViperConfig DEFAULTS = ViperConfig.defaults();

    @TempDir
    Path tmp;

    private static Manifest latest(String notifier, String model) throws InterruptedException {
        return AttacksIT.latest(notifier, model, DEFAULTS);
    }

    private static Manifest as(Manifest m, long version) {
        return new Manifest(
                m.model(), version, m.producerId(), m.publishedAtMicros(), m.metadata(), m.tensors(), m.locations());
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void case1ForgedManifestsOfHeldVersionsAreRefused() throws Exception {
        String notifier = "embedded://127.0.0.1:" + Ports.free();
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 1L << 20, 31);
        Path b = Fleet.model(tmp.resolve("b.safetensors"), 1L << 20, 32);
        Secret mine = RawPeer.userSecret().orElseThrow();
        ManifestTrust producerKey = ManifestTrust.of(Optional.of(mine), Manifest.MAX_VERSION);
        try (Fleet fleet = new Fleet(tmp)) {
            String[] publish = {"--notifier", notifier, "--transports", "tcp://127.0.0.1:0", "--linger", "200s"};
            long v1 = fleet.start("publish-a", args(a, publish)).version(WAIT);
            Manifest m1 = latest(notifier, "m");
            long v2 = fleet.start("publish-b", args(b, publish)).version(WAIT);
            Manifest m2 = latest(notifier, "m");
            assertTrue(v2 > v1);

            // Another user, without this user's secret, cannot even announce: the broker requires it.
            try (RawPeer other = new RawPeer("127.0.0.1", URI.create(notifier).getPort(), 10_000)) {
                Handshake.Refused refused = assertThrows(
                        Handshake.Refused.class, () -> other.handshake("embedded", Optional.empty(), Role.PRODUCER));
                assertTrue(refused.getMessage().contains("requires credentials"), refused.getMessage());
            }
            System.out.println("fault: case 1: another user cannot announce to this user's broker at all");

            // A holder of the consumer token (any consumer host, a relay) passes for the broker; it can replay and
            // assemble manifests, but not sign them.
            Secret token = Secret.parse(mine.consumerToken(), "token");
            try (RogueBroker rogue = new RogueBroker(token);
                    Viper sdk = Viper.builder()
                            .notifier(rogue.uri())
                            .consumerPaths("tcp")
                            .build();
                    ViperConsumer follower = sdk.consumer("m")) {
                rogue.announce(producerKey.seal(ManifestCodec.encode(m2)));
                assertEquals(v2, follower.awaitVersion(v2, WAIT), "a signed manifest through the impostor is taken");
                byte[] signedV1 = producerKey.seal(ManifestCodec.encode(m1));
                String v1AsNext = new String(signedV1, StandardCharsets.UTF_8)
                        .replace("\"version\":" + v1 + ",", "\"version\":" + (v2 + 1) + ",");
                rogue.announce(v1AsNext.getBytes(StandardCharsets.UTF_8)); // v1's signature on "v2+1"
                rogue.announce(ManifestCodec.encode(as(m1, v2 + 2))); // v1 as v2+2, unsigned
                Secret others = Secret.parse("the secret of another deployment", "other");
                rogue.announce(ManifestTrust.of(Optional.of(others), Manifest.MAX_VERSION)
                        .seal(ManifestCodec.encode(as(m1, v2 + 3))));
                rogue.announce(ManifestCodec.encode(as(m2, Manifest.MAX_VERSION))); // case 2 through a consumer
                Thread.sleep(3_000);
                assertEquals(v2, follower.version(), "no forged version was taken");
                System.out.println("fault: case 1: v" + v1 + " replayed as v" + (v2 + 1) + ", unsigned as v" + (v2 + 2)
                        + ", signed with another secret as v" + (v2 + 3) + ", and v2^53-1: the follower kept v" + v2);
            }
        }
    }

    private static String[] args(Path file, String... rest) {
        String[] all = new String[5 + rest.length];
        System.arraycopy(new String[] {"publish", "--model", "m", "--file", file.toString()}, 0, all, 0, 5);
        System.arraycopy(rest, 0, all, 5, rest.length);
        return all;
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void case2AForgedLastVersionLocksNoProducerOut() throws Exception {
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 1L << 20, 41);
        Path b = Fleet.model(tmp.resolve("b.safetensors"), 1L << 20, 42);
        ManifestTrust signer = ManifestTrust.fromConfig(DEFAULTS);
        try (Fleet fleet = new Fleet(tmp)) {
            long v = fleet.start(
                            "publish-a",
                            args(a, "--notifier", notifier, "--transports", "tcp://127.0.0.1:0", "--linger", "200s"))
                    .version(WAIT);
            Manifest real = latest(notifier, "m");
            try (RawPeer forger = new RawPeer("127.0.0.1", port, 10_000)) {
                // Even a holder of the producer's key cannot push the model to its last version.
                forger.handshake("embedded", RawPeer.userSecret(), Role.PRODUCER);
                for (byte[] forged : new byte[][] {
                    signer.seal(ManifestCodec.encode(as(real, Manifest.MAX_VERSION))),
                    ManifestCodec.encode(as(real, Manifest.MAX_VERSION))
                }) {
                    forger.send(AttacksIT.publishFrame(1, "m", forged));
                    byte[] answer = forger.readFrame();
                    assertEquals(NotifyProtocol.ERROR, answer[1], "the broker refuses v2^53-1");
                }
            }
            assertEquals(v, latest(notifier, "m").version(), "the broker still holds v" + v);
            Fleet.Member next = fleet.start("publish-b", args(b, "--notifier", notifier, "--linger", "0"));
            long vb = next.version(WAIT);
            assertEquals(0, next.exit(WAIT), next.stderr());
            assertEquals(v + 1, vb, "the next producer numbers on from v" + v);
            System.out.println(
                    "fault: case 2: v2^53-1, signed or not, refused by the broker; the next publish is v" + vb);
        }
    }
}
