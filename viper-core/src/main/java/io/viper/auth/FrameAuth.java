package io.viper.auth;

import io.viper.net.FrameChannel;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Runs the {@link Handshake} over a {@link FrameChannel}, for the servers and clients that speak plain NIO (the
 * {@code tcp://} client, the ucx and GPU control channels). Both calls block the calling thread until the handshake is
 * done or {@code deadline} ({@link System#nanoTime()} based) passes. Stateless.
 */
public final class FrameAuth {
    private FrameAuth() {}

    /**
     * The server's side: sends the challenge, checks the proof, sends the verdict; returns the peer's role. A refused
     * peer has been told why; close the channel.
     */
    public static Role serve(FrameChannel channel, Authenticator.Exchange exchange, String peer, long deadline)
            throws IOException, Handshake.Refused {
        channel.writeFrame(ByteBuffer.wrap(exchange.challenge()), deadline);
        Role role;
        try {
            role = exchange.verify(receive(channel, deadline), peer);
        } catch (Handshake.Refused e) {
            channel.writeFrame(ByteBuffer.wrap(exchange.refusal("authentication failed")), deadline);
            throw e;
        }
        channel.writeFrame(ByteBuffer.wrap(exchange.accepted()), deadline);
        return role;
    }

    /** The client's side: answers the challenge and checks the verdict. */
    public static void connect(FrameChannel channel, ClientAuth.Attempt attempt, long deadline)
            throws IOException, Handshake.Refused {
        byte[] proof = attempt.proof(receive(channel, deadline));
        channel.writeFrame(ByteBuffer.wrap(proof), deadline);
        attempt.verdict(receive(channel, deadline));
    }

    private static byte[] receive(FrameChannel channel, long deadline) throws IOException {
        ByteBuffer frame = channel.readFrame(deadline, Handshake.MAX_FRAME);
        byte[] body = new byte[frame.remaining()];
        frame.get(body);
        return body;
    }
}
