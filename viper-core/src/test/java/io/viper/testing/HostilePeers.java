package io.viper.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.auth.Handshake;
import io.viper.auth.Role;
import io.viper.auth.Secret;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

/**
 * What hostile or broken peers try on a Viper server's port, and what each must get: garbage, a huge length prefix, a
 * truncated frame, a silent connection, a peer that trickles its bytes, and more connections than one peer may hold,
 * before and after the authentication handshake. The server closes each such connection (at once, or when
 * {@code viper.limits.handshake.ms} or {@code viper.limits.idle.ms} pass, which the server under test sets short) and
 * goes on serving: after every case the target's check that a good client is served runs. Each case adds one line to
 * the returned list ("fault: what happened"), for test reports.
 */
public final class HostilePeers {
    /**
     * A server under test.
     *
     * @param host where it listens
     * @param port its port
     * @param protocol its handshake's protocol name ({@code tcp}, {@code embedded}, {@code ucx}, {@code cuda-pipe})
     * @param prelude bytes a client sends right after the handshake (the ucx and GPU magic), or none
     * @param goodClient reads from the server as a real client would, failing the test if it cannot
     * @param perPeerLimit the server's {@code viper.limits.connections.per.peer}
     */
    public record Target(
            String host, int port, String protocol, byte[] prelude, Runnable goodClient, int perPeerLimit) {}

    /** Limits short enough for tests: the handshake and each frame within 1 s, 8 connections per peer. */
    public static final Map<String, String> SHORT_LIMITS = Map.of(
            "viper.limits.handshake.ms",
            "1000",
            "viper.limits.idle.ms",
            "1000",
            "viper.limits.connections.per.peer",
            "8",
            "viper.transfer.timeout.ms",
            "10000");

    private HostilePeers() {}

    /**
     * Reads all of {@code staged} from {@code at} through {@code client} and checks every byte: a good client being
     * served.
     */
    public static void readsExactly(
            io.viper.spi.TransportClient client, io.viper.manifest.Location at, TestStagedCheckpoint staged) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(staged.manifest().totalBytes());
            client.read(staged.manifest(), at, List.of(new io.viper.spi.ByteRange(0, dst.byteSize(), 0)), dst);
            assertEquals(-1, staged.data().mismatch(dst), "byte-identical");
        }
    }

    /** Runs every case against a server without a secret (so that the post-handshake cases reach its protocol). */
    public static List<String> tryAll(Target t) throws Exception {
        List<String> report = new ArrayList<>();
        byte[] garbage = new byte[4096];
        new Random(14).nextBytes(garbage);
        garbage[0] = 0; // a plausible length, then noise

        report.add(closed(t, "garbage instead of the handshake", p -> p.send(garbage)));
        report.add(closed(
                t,
                "a 2 GiB length prefix instead of the handshake proof",
                p -> p.send(new byte[] {0x7f, -1, -1, -1, 1, 2, 3})));
        report.add(closed(
                t, "a truncated handshake proof, then silence", p -> p.send(new byte[] {0, 0, 0, 69, 0x56, 0x41})));
        report.add(closed(t, "a silent connection that never answers the challenge", p -> {}));
        report.add(closed(
                t,
                "a handshake proof trickled a byte at a time",
                p -> trickle(p, new byte[] {0, 0, 0, 69, 0x56, 0x41, 0x55, 0x31, 0, 0, 0})));

        report.add(closedAfterHandshake(t, "garbage after the handshake", p -> p.send(garbage)));
        report.add(closedAfterHandshake(
                t, "a 2 GiB length prefix after the handshake", p -> p.send(new byte[] {0x7f, -1, -1, -1, 1, 2, 3})));
        report.add(closedAfterHandshake(
                t, "a frame of -1 bytes after the handshake", p -> p.send(new byte[] {-1, -1, -1, -1})));
        report.add(closedAfterHandshake(
                t, "a truncated frame, then silence", p -> p.send(new byte[] {0, 0, 0, 100, 1, 2, 3})));
        report.add(closedAfterHandshake(t, "a silent connection after the handshake", p -> {}));
        report.add(closedAfterHandshake(
                t,
                "a frame trickled a byte at a time",
                p -> trickle(p, new byte[] {0, 0, 0, 40, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 3})));
        report.add(tooManyConnections(t));
        return report;
    }

    /** With a secret on the server: a peer without it gets the challenge and nothing else, whatever it sends. */
    public static List<String> strangerGetsOnlyTheChallenge(Target t, byte[] protocolRequest) throws Exception {
        List<String> report = new ArrayList<>();
        try (RawPeer p = new RawPeer(t.host(), t.port(), 10_000)) {
            byte[] challenge = p.readFrame();
            assertEquals(37, challenge.length, "the challenge is magic, flags and a nonce");
            assertEquals(Handshake.MAGIC, ByteBuffer.wrap(challenge).getInt());
            assertEquals(1, challenge[4] & 1, "the server says it requires credentials");
            p.send(protocolRequest);
            byte[] rest = drain(p);
            // At most a refusal verdict (magic, status 1, zero MAC, the reason), never a byte of the protocol.
            assertTrue(
                    rest.length == 0 || (ByteBuffer.wrap(rest).getInt(4) == Handshake.MAGIC && rest[8] == 1),
                    "after the challenge the server sent " + rest.length + " bytes that are not a refusal");
            report.add(t.protocol() + ": a request without the handshake: the challenge, then "
                    + (rest.length == 0 ? "the connection closed" : "a refusal and the close") + ", nothing else");
        }
        try (RawPeer p = new RawPeer(t.host(), t.port(), 10_000)) {
            Secret wrong = Secret.parse("not the secret the server holds", "test");
            String refused;
            try {
                p.handshake(t.protocol(), Optional.of(wrong), Role.CONSUMER);
                refused = null;
            } catch (Handshake.Refused e) {
                refused = e.getMessage();
            }
            assertTrue(
                    refused != null && refused.contains("refused this client"),
                    "a wrong secret is refused: " + refused);
            assertTrue(p.closedByPeer(), "and the connection closed");
            report.add(t.protocol() + ": a wrong secret: refused (" + refused + ")");
        }
        try (RawPeer p = new RawPeer(t.host(), t.port(), 10_000)) {
            String refused;
            try {
                p.handshake(t.protocol(), Optional.empty(), Role.CONSUMER);
                refused = null;
            } catch (Handshake.Refused e) {
                refused = e.getMessage();
            }
            assertTrue(refused != null && refused.contains("requires credentials"), "no secret: " + refused);
            report.add(t.protocol() + ": no secret: " + refused);
        }
        t.goodClient().run();
        return report;
    }

    @FunctionalInterface
    private interface Fault {
        void act(RawPeer p) throws IOException, InterruptedException;
    }

    private static String closed(Target t, String what, Fault fault) throws Exception {
        try (RawPeer p = new RawPeer(t.host(), t.port(), 15_000)) {
            p.readFrame(); // the challenge
            fault.act(p);
            assertTrue(p.closedByPeer(), t.protocol() + ": " + what + ": the server did not close the connection");
        }
        t.goodClient().run();
        return t.protocol() + ": " + what + ": connection closed, a good client still served";
    }

    private static String closedAfterHandshake(Target t, String what, Fault fault) throws Exception {
        try (RawPeer p = RawPeer.authenticated(t.host(), t.port(), t.protocol())) {
            if (t.prelude().length > 0) {
                p.send(t.prelude());
            }
            fault.act(p);
            assertTrue(p.closedByPeer(), t.protocol() + ": " + what + ": the server did not close the connection");
        } catch (Handshake.Refused e) {
            throw new AssertionError(t.protocol() + ": the handshake without a secret failed: " + e.getMessage(), e);
        }
        t.goodClient().run();
        return t.protocol() + ": " + what + ": connection closed, a good client still served";
    }

    private static String tooManyConnections(Target t) throws Exception {
        List<RawPeer> held = new ArrayList<>();
        int refused = 0;
        try {
            for (int i = 0; i < t.perPeerLimit() + 5; i++) {
                RawPeer p = new RawPeer(t.host(), t.port(), 2_000);
                held.add(p);
                try {
                    p.readFrame();
                } catch (IOException closedAtOnce) {
                    refused++;
                }
            }
            assertTrue(
                    refused >= 5,
                    t.protocol() + ": " + (t.perPeerLimit() + 5) + " connections from one peer, limit "
                            + t.perPeerLimit() + ": only " + refused + " closed at once");
        } finally {
            for (RawPeer p : held) {
                p.close();
            }
        }
        // The server notices the closes on its own time: a good client may need a moment for a slot.
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            try {
                t.goodClient().run();
                break;
            } catch (RuntimeException | AssertionError e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
        return t.protocol() + ": " + (t.perPeerLimit() + 5) + " connections from one address (limit " + t.perPeerLimit()
                + "): " + refused + " closed at once, a good client served once they closed";
    }

    private static void trickle(RawPeer p, byte[] bytes) throws IOException, InterruptedException {
        for (byte b : bytes) {
            try {
                p.send(new byte[] {b});
            } catch (SocketException closed) {
                return;
            }
            Thread.sleep(150);
        }
    }

    private static byte[] drain(RawPeer p) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buf = new byte[4096];
        try {
            for (int n; (n = p.in.read(buf)) >= 0; ) {
                out.write(buf, 0, n);
            }
        } catch (SocketException reset) {
            // closed
        }
        return out.toByteArray();
    }
}
