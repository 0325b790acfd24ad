package io.viper.auth;

import io.viper.ViperConfig;
import io.viper.net.FrameChannel;
import io.viper.net.PeerLimit;
import java.io.IOException;
import java.net.InetAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * What a plain-NIO server of Viper (the ucx and GPU control channels; the agent) does with each connection before and
 * while it serves it, made once per server from its configuration and bind address: at most
 * {@code viper.limits.connections.per.peer} connections per peer address, {@code viper.limits.connections.total} in all
 * and {@code viper.limits.connections.unauthenticated} in their handshake ({@link #peers}), the authentication
 * handshake within {@code viper.limits.handshake.ms} ({@link #handshake}, with an {@link Authenticator} that refuses to
 * start a server beyond loopback without a secret), frames no longer than the protocol's limit or
 * {@code viper.limits.frame.bytes} ({@link #frames}), and each request whole within {@code viper.limits.idle.ms}
 * ({@link #requestDeadline}), so that a silent or trickling peer is closed. The Netty servers get the same from
 * viper-netty's {@code ServerSecurity}. Thread-safe.
 */
public final class ConnectionGate {
    private final Authenticator authenticator;
    private final PeerLimit peers;
    private final int maxFrame;
    private final long idleMs;
    private final long handshakeMs;

    private ConnectionGate(Authenticator authenticator, PeerLimit peers, int maxFrame, long idleMs, long handshakeMs) {
        this.authenticator = authenticator;
        this.peers = peers;
        this.maxFrame = maxFrame;
        this.idleMs = idleMs;
        this.handshakeMs = handshakeMs;
    }

    /**
     * The gate of a {@code protocol} server bound to {@code bind} whose frames are at most {@code protocolMaxFrame}.
     *
     * @throws io.viper.errors.ViperConfigException when the server must not start (no secret beyond loopback)
     */
    public static ConnectionGate forServer(
            ViperConfig config, String protocol, InetAddress bind, int protocolMaxFrame) {
        return new ConnectionGate(
                Authenticator.forServer(config, protocol, bind),
                new PeerLimit(
                        protocol + " server on " + bind.getHostAddress(),
                        config.get(ViperConfig.LIMIT_CONNECTIONS_PER_PEER),
                        config.get(ViperConfig.LIMIT_CONNECTIONS_TOTAL),
                        config.get(ViperConfig.LIMIT_CONNECTIONS_UNAUTHENTICATED)),
                (int) Math.min(protocolMaxFrame, config.get(ViperConfig.LIMIT_FRAME_BYTES)),
                config.get(ViperConfig.LIMIT_IDLE_MS),
                config.get(ViperConfig.LIMIT_HANDSHAKE_MS));
    }

    /**
     * The connection counts (per peer, in all, in the handshake): {@link PeerLimit#admit} each accepted connection,
     * {@link PeerLimit.Admission#release} it when it closes.
     */
    public PeerLimit peers() {
        return peers;
    }

    /** The limits of a connection's frames, {@code minFrame} bytes and up; the deadlines bound every wait. */
    public FrameChannel.Limits frames(int minFrame) {
        return new FrameChannel.Limits(minFrame, maxFrame, Duration.ZERO);
    }

    /**
     * Runs the server's side of the handshake on a new connection, which {@code admission} counts; returns the role its
     * peer proved, and the connection leaves the handshake slots.
     */
    public Role handshake(FrameChannel channel, String peer, PeerLimit.Admission admission)
            throws IOException, Handshake.Refused {
        Role role = FrameAuth.serve(channel, authenticator.exchange(), peer, deadlineAfter(handshakeMs));
        admission.authenticated();
        return role;
    }

    /** The deadline of the next request: now plus {@code viper.limits.idle.ms}. */
    public long requestDeadline() {
        return deadlineAfter(idleMs);
    }

    /** Now plus {@code ms}, as a {@link FrameChannel} deadline. */
    public static long deadlineAfter(long ms) {
        long now = System.nanoTime();
        long n = TimeUnit.MILLISECONDS.toNanos(ms);
        return n > Long.MAX_VALUE - now ? FrameChannel.NO_DEADLINE : now + n;
    }

    /** Whether peers must prove a key. */
    public boolean authenticates() {
        return authenticator.required();
    }
}
