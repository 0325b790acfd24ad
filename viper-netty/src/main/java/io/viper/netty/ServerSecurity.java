package io.viper.netty;

import io.netty.channel.Channel;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.ssl.SslContext;
import io.viper.ViperConfig;
import io.viper.auth.Authenticator;
import io.viper.auth.Role;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What a Netty server of Viper does with a connection before its protocol sees a byte, made once per server from its
 * configuration and bind address: at the head of each new connection's pipeline {@link #install} puts the per-peer
 * connection limit ({@code viper.limits.connections.per.peer}), TLS ({@code viper.tls.*}), the authentication handshake
 * ({@link Authenticator#forServer}: which also refuses to start a server beyond loopback without a secret) and the
 * half-sent-frame guard ({@code viper.limits.idle.ms}). The server then adds its frame decoder, with at most
 * {@link #maxFrame}, and reads the peer's proved role with {@link #role}. Thread-safe.
 */
public final class ServerSecurity {
    private static final System.Logger LOG = System.getLogger(ServerSecurity.class.getName());

    private final String name;
    private final Authenticator authenticator;
    private final Optional<SslContext> tls;
    private final PeerLimiter limiter;
    private final long maxFrame;
    private final long bufferBytes;
    private final long idleMs;
    private final long handshakeMs;
    private final Map<InetAddress, Boolean> warned = new ConcurrentHashMap<>();

    private ServerSecurity(String name, Authenticator authenticator, Optional<SslContext> tls, ViperConfig config) {
        this.name = name;
        this.authenticator = authenticator;
        this.tls = tls;
        this.limiter = new PeerLimiter(
                name,
                config.get(ViperConfig.LIMIT_CONNECTIONS_PER_PEER),
                config.get(ViperConfig.LIMIT_CONNECTIONS_TOTAL),
                config.get(ViperConfig.LIMIT_CONNECTIONS_UNAUTHENTICATED));
        this.maxFrame = config.get(ViperConfig.LIMIT_FRAME_BYTES);
        this.bufferBytes = config.get(ViperConfig.LIMIT_BUFFER_BYTES);
        this.idleMs = config.get(ViperConfig.LIMIT_IDLE_MS);
        this.handshakeMs = config.get(ViperConfig.LIMIT_HANDSHAKE_MS);
    }

    /**
     * The security of a {@code protocol} server ({@code tcp}, {@code embedded}) bound to {@code bind}.
     *
     * @throws io.viper.errors.ViperConfigException when it must not start: no secret beyond loopback, TLS files missing
     *     or unusable
     */
    public static ServerSecurity forServer(ViperConfig config, String protocol, InetSocketAddress bind) {
        String name = protocol + " server on " + bind.getAddress().getHostAddress();
        return new ServerSecurity(
                protocol + " server",
                Authenticator.forServer(config, protocol, bind.getAddress()),
                NettyTls.server(config, name),
                config);
    }

    /**
     * Adds the limit, TLS, the handshake and the frame guard to a new connection, ahead of everything the server adds
     * after.
     */
    public void install(SocketChannel ch) {
        ch.pipeline().addLast(limiter);
        tls.ifPresent(ctx -> ch.pipeline().addLast(ctx.newHandler(ch.alloc())));
        ch.pipeline().addLast(new ServerAuthHandler(this), new FrameGuard(this));
    }

    /**
     * The largest frame the server's decoder may accept: its protocol's own limit or {@code viper.limits.frame.bytes},
     * the smaller.
     */
    public int maxFrame(int protocolMax) {
        return (int) Math.min(protocolMax, maxFrame);
    }

    /** {@code viper.limits.buffer.bytes}: the most bytes queued for one peer. */
    public long bufferBytes() {
        return bufferBytes;
    }

    /** {@code viper.limits.idle.ms}. */
    public long idleMs() {
        return idleMs;
    }

    long handshakeMs() {
        return handshakeMs;
    }

    Authenticator authenticator() {
        return authenticator;
    }

    /** Whether peers must authenticate. */
    public boolean authenticates() {
        return authenticator.required();
    }

    /**
     * The role the peer of {@code ch} proved (every right when the server does not authenticate); null before the
     * handshake.
     */
    public static Role role(Channel ch) {
        return ServerAuthHandler.role(ch);
    }

    /**
     * Logs a connection closed for {@code why}: the first time per peer address as a warning, later ones for debugging.
     */
    void refused(Channel ch, String why) {
        InetAddress peer = ch.remoteAddress() instanceof InetSocketAddress a ? a.getAddress() : null;
        boolean first = peer != null && warned.size() < 1_000 && warned.putIfAbsent(peer, Boolean.TRUE) == null;
        LOG.log(
                first ? Level.WARNING : Level.DEBUG,
                name + ": closing the connection from " + ch.remoteAddress() + ": " + why);
    }
}
