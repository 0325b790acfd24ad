package io.viper.auth;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.Tier;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Signed manifests ({@link ManifestTrust}), the consumer token that checks them, and this user's own secret. */
class ManifestTrustTest {
    private static final Secret PRODUCER = Secret.parse("correct horse battery staple", "test secret");
    private static final Secret TOKEN = Secret.parse(PRODUCER.consumerToken(), "test token");
    private static final Secret OTHER = Secret.parse("another secret, not the one", "other secret");
    private static final long JUMP = 1000;

    private static byte[] encoded(long version) {
        return ManifestCodec.encode(new Manifest(
                "m",
                version,
                "p",
                1,
                new LinkedHashMap<>(),
                List.of(),
                List.of(new Location(URI.create("tcp://127.0.0.1:1"), Tier.HOST))));
    }

    @Test
    void aSignedManifestOpensForEveryHolderOfTheKeyAndDecodes() {
        byte[] plain = encoded(7);
        byte[] sealed = ManifestTrust.of(Optional.of(PRODUCER), JUMP).seal(plain);
        assertArrayEquals(plain, ManifestTrust.of(Optional.of(TOKEN), JUMP).open(sealed, "t"));
        assertArrayEquals(plain, ManifestTrust.of(Optional.of(PRODUCER), JUMP).open(sealed, "t"));
        assertEquals(7, ManifestCodec.decode(sealed, "t").version(), "readers that do not check ignore the member");
        // The same secret signs the same way in every process: the key is derived, not random.
        assertArrayEquals(
                sealed,
                ManifestTrust.of(Optional.of(Secret.parse("correct horse battery staple", "again")), 1)
                        .seal(plain));
    }

    @Test
    void unsignedAlteredReplayedOrForeignManifestsAreRefused() {
        ManifestTrust consumer = ManifestTrust.of(Optional.of(TOKEN), JUMP);
        byte[] sealed = ManifestTrust.of(Optional.of(PRODUCER), JUMP).seal(encoded(7));
        ViperFormatException unsigned = assertThrows(ViperFormatException.class, () -> consumer.open(encoded(7), "x"));
        assertTrue(unsigned.getMessage().contains("not signed"), unsigned.getMessage());
        // v7's signature on v8: the version is inside the signed bytes.
        String replay = new String(sealed, StandardCharsets.UTF_8).replace("\"version\":7", "\"version\":8");
        assertThrows(
                ViperFormatException.class, () -> consumer.open(replay.getBytes(StandardCharsets.UTF_8), "replay"));
        byte[] foreign = ManifestTrust.of(Optional.of(OTHER), JUMP).seal(encoded(7));
        assertTrue(assertThrows(ViperFormatException.class, () -> consumer.open(foreign, "other"))
                .getMessage()
                .contains("does not verify"));
        byte[] flipped = sealed.clone();
        flipped[flipped.length - 5] ^= 1;
        assertThrows(ViperFormatException.class, () -> consumer.open(flipped, "flipped"));
    }

    @Test
    void aConsumerTokenChecksButCannotSign() {
        ViperConfigException e = assertThrows(
                ViperConfigException.class,
                () -> ManifestTrust.of(Optional.of(TOKEN), JUMP).seal(encoded(1)));
        assertTrue(e.getMessage().contains("consumer token cannot publish"), e.getMessage());
        assertFalse(TOKEN.signingKey().isPresent());
        assertEquals(PRODUCER.verifyKey(), TOKEN.verifyKey());
        assertNotEquals(PRODUCER.verifyKey(), OTHER.verifyKey());
        // A token of the format before signed manifests (the bare consumer key) is refused with what to do.
        String old = Secret.CONSUMER_TOKEN_PREFIX + "A".repeat(43);
        assertTrue(assertThrows(ViperConfigException.class, () -> Secret.parse(old, "old token"))
                .getMessage()
                .contains("viper secret --consumer"));
    }

    @Test
    void withoutASecretNothingIsSignedOrChecked() {
        ManifestTrust none = ManifestTrust.of(Optional.empty(), JUMP);
        byte[] plain = encoded(3);
        assertSame(plain, none.seal(plain));
        assertSame(plain, none.open(plain, "x"));
    }

    @Test
    void aVersionFarAheadOfTheNewestAndTheClockIsRefused() {
        ManifestTrust t = ManifestTrust.of(Optional.of(TOKEN), JUMP);
        t.checkVersion("m", 5, 5 + JUMP, "ok");
        long clock = System.currentTimeMillis();
        t.checkVersion("m", 5, clock, "a producer numbering from the clock on a new broker");
        ViperFormatException e =
                assertThrows(ViperFormatException.class, () -> t.checkVersion("m", 5, Manifest.MAX_VERSION, "forged"));
        assertTrue(e.getMessage().contains(ViperConfig.VERSIONS_MAX_JUMP.name()), e.getMessage());
        assertThrows(ViperFormatException.class, () -> t.checkVersion("m", 0, clock + 1_000_000, "forged"));
    }

    @Test
    void thisUsersSecretIsMadeOnceWithMode600(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("cfg").resolve("viper").resolve("secret");
        ViperConfig config = ViperConfig.of(Map.of(ViperConfig.AUTH_USER_SECRET.name(), file.toString()));
        Secret first = Secret.fromConfig(config).orElseThrow();
        assertEquals(Role.PRODUCER, first.role());
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent())));
        assertEquals(
                first.consumerToken(), Secret.fromConfig(config).orElseThrow().consumerToken());
        try (Stream<Path> files = Files.list(file.getParent())) {
            assertEquals(1, files.count(), "no temporary left beside it");
        }
        assertTrue(Secret.fromConfig(ViperConfig.of(Map.of(ViperConfig.AUTH_USER_SECRET.name(), "off")))
                .isEmpty());
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
        assertThrows(ViperConfigException.class, () -> Secret.fromConfig(config), "a readable one is refused");
    }
}
