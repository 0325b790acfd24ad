package io.viper.transfer.tcp.internal;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.timeout.IdleStateHandler;
import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperException;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.net.HostPort;
import io.viper.netty.ServerLoops;
import io.viper.netty.ServerSecurity;
import io.viper.spi.SourceTracker;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.TransportServer;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The producer side of the {@code tcp://} transport: a Netty server on its own event-loop group that serves the exposed
 * staged checkpoints. {@link #expose} and {@link #withdraw} may be called from any thread; connections are served on
 * the event loops (see {@link ServerConnection}).
 */
public final class TcpServer implements TransportServer {
    private static final System.Logger LOG = System.getLogger(TcpServer.class.getName());

    /** The event loops, the server channel and every connection. */
    private final ServerLoops loops;

    private final Location location;
    private final Map<Key, StagedCheckpoint> exposed = new ConcurrentHashMap<>();
    private final AtomicLong leaseIds = new AtomicLong();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final long timeoutMs;
    private final int chunkBytes;
    private final ServerSecurity security;
    /** The producer's tracker, or null: this server tells readers to read from itself (a relay's server). */
    private volatile SourceTracker tracker;

    private record Key(String model, long version) {}

    private TcpServer(
            ServerLoops loops, Channel serverChannel, long timeoutMs, int chunkBytes, ServerSecurity security) {
        this.loops = loops;
        this.security = security;
        this.location =
                new Location(TcpProtocol.locationUri((InetSocketAddress) serverChannel.localAddress()), Tier.HOST);
        this.timeoutMs = timeoutMs;
        this.chunkBytes = chunkBytes;
    }

    /**
     * Binds a server to {@code bind} ({@code tcp://host:port}, port 0 for any free port). Every connection starts with
     * {@code config}'s TLS and authentication handshake ({@link ServerSecurity}); one holding leases without a request,
     * or not reading a stream, for {@code viper.transfer.timeout.ms} is closed, and one without leases silent for
     * {@code viper.limits.idle.ms}.
     */
    public static TcpServer open(URI bind, ViperConfig config) {
        long timeoutMs = config.get(ViperConfig.TRANSFER_TIMEOUT_MS);
        InetSocketAddress address = HostPort.parse(bind, "tcp", true).resolve();
        ServerSecurity security = ServerSecurity.forServer(config, "tcp", address);
        int threads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));
        int chunk = TcpProtocol.CHUNK_BYTES;
        ServerLoops loops = new ServerLoops("viper-tcp-server", threads);
        TcpServer[] self = new TcpServer[1];
        try {
            ServerBootstrap b = new ServerBootstrap()
                    .group(loops.group())
                    .channel(NioServerSocketChannel.class)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childOption(ChannelOption.SO_KEEPALIVE, true)
                    // Chunks are zero-copy views of the staged memory; the water mark bounds how many are queued.
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(chunk, 2 * chunk))
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            TcpServer server = self[0];
                            if (server == null) {
                                ch.close(); // bind has not returned yet
                                return;
                            }
                            loops.add(ch); // closes ch at once when the server is closed already
                            security.install(ch);
                            long readerIdle = Math.min(server.timeoutMs, security.idleMs());
                            ch.pipeline()
                                    .addLast(
                                            new IdleStateHandler(
                                                    true, readerIdle, server.timeoutMs, 0, TimeUnit.MILLISECONDS),
                                            new LengthFieldBasedFrameDecoder(
                                                    TcpProtocol.LENGTH_BYTES
                                                            + security.maxFrame(TcpProtocol.MAX_REQUEST_FRAME),
                                                    0,
                                                    TcpProtocol.LENGTH_BYTES,
                                                    0,
                                                    TcpProtocol.LENGTH_BYTES),
                                            new RequestDecoder(),
                                            new ServerConnection(server));
                        }
                    });
            ChannelFuture f = b.bind(address).awaitUninterruptibly();
            if (!f.isSuccess()) {
                throw new RetriableViperException(
                        ViperException.Reason.UNAVAILABLE,
                        "cannot bind tcp transport to " + bind + ": "
                                + Objects.toString(
                                        f.cause() == null ? null : f.cause().getMessage(), "unknown error"),
                        f.cause());
            }
            loops.add(f.channel());
            self[0] = new TcpServer(loops, f.channel(), timeoutMs, chunk, security);
            LOG.log(Level.DEBUG, () -> "tcp transport serving on " + self[0].location.uri());
            return self[0];
        } catch (RuntimeException e) {
            loops.abandon();
            throw e;
        }
    }

    @Override
    public Location location() {
        return location;
    }

    /** Streams a relayed version as far as it is verified and waits for the rest ({@link ServerConnection}). */
    @Override
    public boolean waitsForReadable() {
        return true;
    }

    @Override
    public void track(SourceTracker tracker) {
        this.tracker = tracker;
    }

    /** The tracker installed, or null. */
    SourceTracker tracker() {
        return tracker;
    }

    @Override
    public void expose(StagedCheckpoint staged) {
        if (closed.get()) {
            throw new ViperClosedException("tcp transport " + location.uri() + " is closed");
        }
        exposed.put(new Key(staged.model(), staged.version()), staged);
    }

    @Override
    public void withdraw(StagedCheckpoint staged) {
        exposed.remove(new Key(staged.model(), staged.version()), staged);
    }

    /** The exposed checkpoint of {@code model} {@code version}, or null. */
    StagedCheckpoint find(String model, long version) {
        return exposed.get(new Key(model, version));
    }

    /** Whether {@code staged} is still exposed (checked after a lease was taken, against a racing withdraw). */
    boolean isExposed(StagedCheckpoint staged) {
        return exposed.get(new Key(staged.model(), staged.version())) == staged;
    }

    long nextLeaseId() {
        return leaseIds.incrementAndGet();
    }

    long timeoutMs() {
        return timeoutMs;
    }

    int chunkBytes() {
        return chunkBytes;
    }

    ServerSecurity security() {
        return security;
    }

    URI uri() {
        return location.uri();
    }

    /**
     * Stops accepting, closes every connection (their leases are released on the event loops) and shuts the event loops
     * down; waits for that unless called from one of them. Idempotent.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        exposed.clear();
        loops.close();
        LOG.log(Level.DEBUG, () -> "tcp transport " + location.uri() + " closed");
    }
}
