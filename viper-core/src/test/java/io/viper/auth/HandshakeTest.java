package io.viper.auth;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import io.viper.net.FrameChannel;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The secret file, the handshake both ways, and the servers' policy without a secret. */
class HandshakeTest {
    private static final Secret PRODUCER = Secret.parse("correct horse battery staple", "test secret");
    private static final Secret OTHER = Secret.parse("another secret, not the one", "other secret");
    private static final Secret CONSUMER = Secret.parse(PRODUCER.consumerToken(), "test token");

    @TempDir
    Path dir;

    /** Runs a whole handshake in memory; returns the role the server granted. */
    private static Role handshake(Authenticator server, ClientAuth client) throws Handshake.Refused {
        Authenticator.Exchange ex = server.exchange();
        ClientAuth.Attempt attempt = client.attempt(server.protocol(), "server");
        byte[] proof = attempt.proof(ex.challenge());
        Role role = ex.verify(proof, "client");
        attempt.verdict(ex.accepted());
        return role;
    }

    @Test
    void aProducerSecretGrantsBothRolesAndAConsumerTokenOnlyReading() throws Exception {
        Authenticator server = Authenticator.of("tcp", Optional.of(PRODUCER));
        assertEquals(Role.PRODUCER, handshake(server, ClientAuth.of(Optional.of(PRODUCER), Role.PRODUCER)));
        assertEquals(Role.CONSUMER, handshake(server, ClientAuth.of(Optional.of(PRODUCER), Role.CONSUMER)));
        assertEquals(Role.CONSUMER, handshake(server, ClientAuth.of(Optional.of(CONSUMER), Role.CONSUMER)));
        ViperConfigException e =
                assertThrows(ViperConfigException.class, () -> ClientAuth.of(Optional.of(CONSUMER), Role.PRODUCER));
        assertTrue(e.getMessage().contains("a consumer token cannot publish"), e.getMessage());
        assertFalse(CONSUMER.consumerToken().contains(PRODUCER.toString()));
    }

    @Test
    void aClientWithoutTheSecretGetsNothingButTheChallenge() throws Exception {
        Authenticator server = Authenticator.of("embedded", Optional.of(PRODUCER));
        Handshake.Refused none = assertThrows(
                Handshake.Refused.class, () -> handshake(server, ClientAuth.of(Optional.empty(), Role.CONSUMER)));
        assertTrue(none.getMessage().contains("requires credentials: set viper.auth.secret.file"), none.getMessage());
        Handshake.Refused wrong = assertThrows(
                Handshake.Refused.class, () -> handshake(server, ClientAuth.of(Optional.of(OTHER), Role.CONSUMER)));
        assertTrue(wrong.getMessage().contains("wrong credentials"), wrong.getMessage());
        assertTrue(
                none.credentials() && wrong.credentials(), "refusals on credentials: the same credentials fail again");
        // A hand-made proof claiming the producer role without the key.
        Authenticator.Exchange ex = server.exchange();
        byte[] forged = Handshake.proof(Role.PRODUCER.code(), new byte[32], new byte[32]);
        assertThrows(Handshake.Refused.class, () -> ex.verify(forged, "forger"));
        assertEquals(
                37, server.exchange().challenge().length, "the challenge is all a stranger sees: magic, flags, nonce");
    }

    @Test
    void aRecordedProofDoesNotOpenAnotherConnection() throws Exception {
        Authenticator server = Authenticator.of("ucx", Optional.of(PRODUCER));
        Authenticator.Exchange first = server.exchange();
        byte[] recorded = ClientAuth.of(Optional.of(PRODUCER), Role.CONSUMER)
                .attempt("ucx", "s")
                .proof(first.challenge());
        assertEquals(Role.CONSUMER, first.verify(recorded, "client"));
        Handshake.Refused replay =
                assertThrows(Handshake.Refused.class, () -> server.exchange().verify(recorded, "replayer"));
        assertTrue(replay.getMessage().contains("wrong credentials"), replay.getMessage());
    }

    @Test
    void aProofForOneProtocolDoesNotAnswerAnother() throws Exception {
        Authenticator tcp = Authenticator.of("tcp", Optional.of(PRODUCER));
        Authenticator.Exchange ex = tcp.exchange();
        byte[] proof = ClientAuth.of(Optional.of(PRODUCER), Role.CONSUMER)
                .attempt("embedded", "s")
                .proof(ex.challenge());
        assertThrows(Handshake.Refused.class, () -> ex.verify(proof, "client"));
    }

    @Test
    void aClientWithASecretTrustsOnlyAServerThatProvesTheSameKey() throws Exception {
        ClientAuth client = ClientAuth.of(Optional.of(PRODUCER), Role.CONSUMER);
        Handshake.Refused open = assertThrows(
                Handshake.Refused.class, () -> handshake(Authenticator.of("ucx", Optional.empty()), client));
        assertTrue(open.getMessage().contains("does not authenticate"), open.getMessage());
        // An impostor that accepts anything, with a key of its own.
        Authenticator impostor = Authenticator.of("ucx", Optional.of(OTHER));
        Authenticator.Exchange ex = impostor.exchange();
        ClientAuth.Attempt attempt = client.attempt("ucx", "impostor");
        attempt.proof(ex.challenge());
        byte[] fakeAccept = Handshake.verdict(Handshake.ACCEPTED, new byte[32], "");
        Handshake.Refused fake = assertThrows(Handshake.Refused.class, () -> attempt.verdict(fakeAccept));
        assertTrue(fake.getMessage().contains("did not prove it holds this client's secret"), fake.getMessage());
        assertTrue(
                open.credentials() && fake.credentials(), "refusals on credentials: the same credentials fail again");
    }

    @Test
    void withoutSecretsEveryoneIsLetIn() throws Exception {
        assertEquals(
                Role.PRODUCER,
                handshake(Authenticator.of("tcp", Optional.empty()), ClientAuth.of(Optional.empty(), Role.CONSUMER)));
    }

    @Test
    void garbageInsteadOfAHandshakeIsRefused() {
        Authenticator.Exchange ex =
                Authenticator.of("tcp", Optional.of(PRODUCER)).exchange();
        assertThrows(Handshake.Refused.class, () -> ex.verify(new byte[69], "zeros"));
        assertThrows(Handshake.Refused.class, () -> ex.verify("GET / HTTP/1.1".getBytes(UTF_8), "http"));
        Handshake.Refused notViper = assertThrows(
                Handshake.Refused.class,
                () -> ClientAuth.of(Optional.empty(), Role.CONSUMER)
                        .attempt("tcp", "s")
                        .proof(new byte[3]));
        assertFalse(
                notViper.credentials(),
                "a stranger on the port is no refusal of credentials: a Viper server may take the port back");
    }

    @Test
    void aServerWithoutSecretRefusesToStartBeyondLoopbackUnlessTold() throws Exception {
        InetAddress any = InetAddress.getByName("0.0.0.0");
        InetAddress loopback = InetAddress.getLoopbackAddress();
        ViperConfigException e = assertThrows(
                ViperConfigException.class, () -> Authenticator.forServer(ViperConfig.defaults(), "tcp", any));
        assertEquals(
                "tcp server on 0.0.0.0: viper.auth.secret.file is not set; a server on an address other than loopback"
                        + " must authenticate its peers"
                        + " (viper secret --out FILE makes a secret; viper.auth.required=false serves everyone who"
                        + " can connect)",
                e.getMessage());
        assertTrue(
                Authenticator.forServer(ViperConfig.defaults(), "tcp", loopback).required(),
                "on loopback, this user's own secret keeps other users out");
        assertFalse(Authenticator.forServer(ViperConfig.of(Map.of("viper.auth.user.secret", "off")), "tcp", loopback)
                .required());
        assertThrows(
                ViperConfigException.class,
                () -> Authenticator.forServer(ViperConfig.of(Map.of("viper.auth.required", "true")), "tcp", loopback));
        assertFalse(Authenticator.forServer(
                        ViperConfig.of(Map.of("viper.auth.required", "false", "viper.auth.user.secret", "off")),
                        "tcp",
                        any)
                .required());
        Path secret = secretFile("a secret of twenty-odd chars");
        assertTrue(
                Authenticator.forServer(
                                ViperConfig.of(Map.of("viper.auth.secret.file", secret.toString())), "tcp", loopback)
                        .required(),
                "a secret is always used");
    }

    private Path secretFile(String text) throws Exception {
        Path f = dir.resolve("secret-" + System.nanoTime());
        Files.writeString(f, text + "\n");
        Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        return f;
    }

    @Test
    void theSecretFileMustBePrivateLongEnoughAndText() throws Exception {
        Path ok = secretFile(Secret.generate());
        assertEquals(Role.PRODUCER, Secret.load(ok).role());
        Files.setPosixFilePermissions(ok, PosixFilePermissions.fromString("rw-r--r--"));
        ViperConfigException open = assertThrows(ViperConfigException.class, () -> Secret.load(ok));
        assertEquals(
                "viper.auth.secret.file " + ok
                        + ": group or other users may access it (mode rw-r--r--); chmod 600 it, as ssh requires of"
                        + " private keys",
                open.getMessage());
        ViperConfigException shortOne =
                assertThrows(ViperConfigException.class, () -> Secret.load(secretFile("short")));
        assertTrue(
                shortOne.getMessage().contains("the secret has 5 characters, at least 16 are needed"),
                shortOne.getMessage());
        assertThrows(ViperConfigException.class, () -> Secret.load(dir.resolve("missing")));
        assertThrows(ViperConfigException.class, () -> Secret.load(dir));
        Path token = secretFile(PRODUCER.consumerToken());
        assertEquals(Role.CONSUMER, Secret.load(token).role());
        assertThrows(
                ViperConfigException.class, () -> Secret.load(secretFile(Secret.CONSUMER_TOKEN_PREFIX + "not*base64")));
        Path binary = dir.resolve("binary");
        Files.write(
                binary, new byte[] {(byte) 0xff, (byte) 0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
        Files.setPosixFilePermissions(binary, PosixFilePermissions.fromString("rw-------"));
        assertTrue(assertThrows(ViperConfigException.class, () -> Secret.load(binary))
                .getMessage()
                .endsWith("not UTF-8 text"));
        assertFalse(
                Secret.load(ok.resolveSibling(token.getFileName()))
                        .toString()
                        .contains(PRODUCER.consumerToken().substring(25)),
                "toString never shows a key");
    }

    @Test
    void theHandshakeRunsOverAFrameChannel() throws Exception {
        FrameChannel.Limits limits = new FrameChannel.Limits(0, 65_536, Duration.ofSeconds(10));
        try (ServerSocketChannel listener =
                ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            Authenticator server = Authenticator.of("cuda-pipe", Optional.of(PRODUCER));
            CompletableFuture<Role> served = CompletableFuture.supplyAsync(() -> {
                try (SocketChannel s = listener.accept();
                        FrameChannel ch = FrameChannel.of(s, limits)) {
                    return FrameAuth.serve(
                            ch, server.exchange(), "client", System.nanoTime() + TimeUnit.SECONDS.toNanos(10));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            try (FrameChannel ch =
                    FrameChannel.connect((InetSocketAddress) listener.getLocalAddress(), deadline, limits)) {
                assertDoesNotThrow(() -> FrameAuth.connect(
                        ch,
                        ClientAuth.of(Optional.of(CONSUMER), Role.CONSUMER).attempt("cuda-pipe", "server"),
                        deadline));
            }
            assertEquals(Role.CONSUMER, served.get(10, TimeUnit.SECONDS));
        }
    }
}
