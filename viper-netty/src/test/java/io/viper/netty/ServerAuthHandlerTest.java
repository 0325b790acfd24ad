package io.viper.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.viper.ViperConfig;
import io.viper.auth.ClientAuth;
import io.viper.auth.Handshake;
import io.viper.auth.Role;
import io.viper.errors.ViperConfigException;
import io.viper.testing.TestSecrets;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server's side of the handshake on an {@link EmbeddedChannel}, against core's client side ({@link ClientAuth}):
 * who is let in with which role, who is refused and closed, and what happens to the bytes behind the proof.
 */
class ServerAuthHandlerTest {
    private static final InetSocketAddress LOOPBACK = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);

    @TempDir
    Path dir;

    private TestSecrets secrets;
    private final List<EmbeddedChannel> channels = new ArrayList<>();

    @BeforeEach
    void makeSecrets() throws Exception {
        secrets = TestSecrets.make(dir);
    }

    @AfterEach
    void releaseAll() {
        channels.forEach(EmbeddedChannel::finishAndReleaseAll);
    }

    private static ServerSecurity security(Map<String, String> settings, String... more) {
        Map<String, String> all = new HashMap<>(settings);
        for (int i = 0; i < more.length; i += 2) {
            all.put(more[i], more[i + 1]);
        }
        return ServerSecurity.forServer(ViperConfig.of(all), "tcp", LOOPBACK);
    }

    private EmbeddedChannel server(ServerSecurity security) {
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.freezeTime(); // the handshake deadline moves only with advanceTimeBy
        ch.pipeline().addLast(new ServerAuthHandler(security));
        ch.pipeline().fireChannelActive(); // handlers added after registration: start the handshake by hand
        channels.add(ch);
        return ch;
    }

    private static ClientAuth.Attempt client(Map<String, String> settings, Role role) {
        return ClientAuth.of(ViperConfig.of(settings), role).attempt("tcp", "test server");
    }

    /** The body of the next length-prefixed frame the server wrote. */
    private static byte[] sent(EmbeddedChannel ch) {
        ch.runPendingTasks();
        ByteBuf b = ch.readOutbound();
        assertNotNull(b, "the server sent nothing");
        try {
            int n = b.readInt();
            assertEquals(n, b.readableBytes(), "one whole frame");
            byte[] body = new byte[n];
            b.readBytes(body);
            return body;
        } finally {
            b.release();
        }
    }

    /** Answers the challenge with {@code proof} and returns the server's verdict frame. */
    private static byte[] answer(EmbeddedChannel ch, byte[] proof) {
        ch.writeInbound(ServerAuthHandler.frame(proof));
        return sent(ch);
    }

    private static void assertRefusedAndClosed(EmbeddedChannel ch, ClientAuth.Attempt attempt, byte[] verdict) {
        Handshake.Refused refused = assertThrows(Handshake.Refused.class, () -> attempt.verdict(verdict));
        assertTrue(refused.getMessage().contains("refused this client"), refused.getMessage());
        ch.runPendingTasks();
        assertFalse(ch.isOpen(), "a refused peer is closed");
        assertNull(ServerSecurity.role(ch), "a refused peer has no role");
    }

    @Test
    void theProducerSecretIsAcceptedAndTheBytesBehindTheProofGoOnToTheProtocol() throws Exception {
        EmbeddedChannel ch = server(security(secrets.producerSetting(), "viper.limits.handshake.ms", "100"));
        ClientAuth.Attempt attempt = client(secrets.producerSetting(), Role.PRODUCER);
        byte[] proof = attempt.proof(sent(ch));
        ByteBuf hello = Unpooled.copiedBuffer("HELLO", StandardCharsets.US_ASCII);
        ch.writeInbound(Unpooled.wrappedBuffer(ServerAuthHandler.frame(proof), hello));
        attempt.verdict(sent(ch)); // accepted, with the server's proof of the same key
        assertEquals(Role.PRODUCER, ServerSecurity.role(ch));
        assertNull(ch.pipeline().get(ServerAuthHandler.class), "the handler steps out once the peer proved itself");
        ByteBuf rest = ch.readInbound();
        try {
            assertEquals("HELLO", rest.toString(StandardCharsets.US_ASCII));
        } finally {
            rest.release();
        }
        ch.advanceTimeBy(1, TimeUnit.SECONDS);
        ch.runScheduledPendingTasks();
        assertTrue(ch.isOpen(), "the handshake deadline no longer applies");
    }

    @Test
    void aConsumerTokenProvesTheConsumerRoleWhichMayNotPublish() throws Exception {
        EmbeddedChannel ch = server(security(secrets.producerSetting()));
        ClientAuth.Attempt attempt = client(secrets.consumerSetting(), Role.CONSUMER);
        attempt.verdict(answer(ch, attempt.proof(sent(ch))));
        assertEquals(Role.CONSUMER, ServerSecurity.role(ch));
        assertFalse(ServerSecurity.role(ch).mayPublish());
    }

    @Test
    void aConsumerTokenClaimingTheProducerRoleIsRefused() throws Exception {
        EmbeddedChannel ch = server(security(secrets.producerSetting()));
        ClientAuth.Attempt attempt = client(secrets.consumerSetting(), Role.CONSUMER);
        byte[] proof = attempt.proof(sent(ch));
        assertEquals(Role.CONSUMER.code(), proof[4], "PROOF: magic, then the role byte");
        proof[4] = (byte) Role.PRODUCER.code(); // the consumer key's MAC, the producer's role
        assertRefusedAndClosed(ch, attempt, answer(ch, proof));
    }

    @Test
    void aWrongSecretIsRefusedAndClosed() throws Exception {
        TestSecrets other = TestSecrets.make(Files.createDirectory(dir.resolve("other")));
        EmbeddedChannel ch = server(security(secrets.producerSetting()));
        ClientAuth.Attempt attempt = client(other.producerSetting(), Role.PRODUCER);
        assertRefusedAndClosed(ch, attempt, answer(ch, attempt.proof(sent(ch))));
    }

    @Test
    void aProofReplayedOnAnotherConnectionIsRefused() throws Exception {
        ServerSecurity security = security(secrets.producerSetting());
        EmbeddedChannel first = server(security);
        ClientAuth.Attempt attempt = client(secrets.producerSetting(), Role.PRODUCER);
        byte[] proof = attempt.proof(sent(first));
        attempt.verdict(answer(first, proof));
        assertEquals(Role.PRODUCER, ServerSecurity.role(first));

        EmbeddedChannel second = server(security); // a new challenge, a new server nonce
        sent(second);
        assertRefusedAndClosed(second, client(secrets.producerSetting(), Role.PRODUCER), answer(second, proof));
    }

    @Test
    void aPeerWithoutCredentialsIsRefusedWhereTheServerHasASecret() {
        EmbeddedChannel ch = server(security(secrets.producerSetting()));
        sent(ch);
        byte[] none = ByteBuffer.allocate(5 + 2 * Handshake.NONCE_BYTES)
                .putInt(Handshake.MAGIC)
                .put((byte) 0)
                .array();
        assertRefusedAndClosed(ch, client(Map.of(), Role.CONSUMER), answer(ch, none));
    }

    @Test
    void aProofLongerThanAHandshakeFrameIsRefusedWithoutWaitingForIt() {
        EmbeddedChannel ch = server(security(secrets.producerSetting()));
        sent(ch);
        ch.writeInbound(Unpooled.buffer(4).writeInt(Handshake.MAX_FRAME + 1));
        assertRefusedAndClosed(ch, client(Map.of(), Role.CONSUMER), sent(ch));
    }

    @Test
    void aPeerThatDoesNotProveItselfInTimeIsClosed() {
        EmbeddedChannel ch = server(security(secrets.producerSetting(), "viper.limits.handshake.ms", "50"));
        sent(ch);
        ch.writeInbound(Unpooled.buffer(6).writeInt(40).writeShort(0)); // a proof begun, never finished
        ch.advanceTimeBy(49, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        assertTrue(ch.isOpen(), "within the deadline");
        ch.advanceTimeBy(2, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
        assertFalse(ch.isOpen(), "past viper.limits.handshake.ms");
        assertNull(ServerSecurity.role(ch));
    }

    @Test
    void withoutASecretALoopbackServerLetsEveryPeerInWithEveryRight() throws Exception {
        assertTrue(security(Map.of()).authenticates(), "by default this user's own secret keeps other users out");
        Map<String, String> none = Map.of("viper.auth.user.secret", "off");
        ServerSecurity open = security(none);
        assertFalse(open.authenticates());
        EmbeddedChannel ch = server(open);
        ClientAuth.Attempt attempt = client(none, Role.CONSUMER);
        attempt.verdict(answer(ch, attempt.proof(sent(ch))));
        assertEquals(Role.PRODUCER, ServerSecurity.role(ch));
    }

    @Test
    void aServerBeyondLoopbackDoesNotStartWithoutASecret() {
        ViperConfigException e = assertThrows(
                ViperConfigException.class,
                () -> ServerSecurity.forServer(ViperConfig.defaults(), "tcp", new InetSocketAddress("0.0.0.0", 0)));
        assertTrue(e.getMessage().contains(ViperConfig.AUTH_SECRET_FILE.name()), e.getMessage());
        assertTrue(security(secrets.producerSetting()).authenticates());
    }
}
