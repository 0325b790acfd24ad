package io.viper.notify.embedded.internal;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.timeout.IdleState;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import io.viper.ViperConfig;
import io.viper.auth.ManifestTrust;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.netty.ServerLoops;
import io.viper.netty.ServerSecurity;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The embedded pub/sub broker: a Netty server on a single event-loop thread ({@code viper-notify-broker-*}) that keeps
 * the latest manifest per model in memory and forwards every accepted publication to the model's subscribers. All
 * broker state is confined to that thread, which gives one global order of publications.
 *
 * <p>A subscriber whose socket does not keep up is not buffered without bound: while its channel is not writable, only
 * the newest pending manifest per model is kept for it (older ones are superseded), and sent when it drains; one that
 * lets more than {@code viper.limits.buffer.bytes} pile up is closed. Every connection starts with the authentication
 * handshake ({@link ServerSecurity}); only a producer's credentials may publish. A connection silent for
 * {@code viper.limits.idle.ms} is closed (clients send HELLO as a heartbeat).
 */
public final class Broker implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Broker.class.getName());
    /** Models the broker keeps a latest manifest for. */
    static final int MAX_MODELS = 10_000;
    /** Bytes of latest manifests the broker keeps in all. */
    static final long MAX_RETAINED_BYTES = 1L << 30;
    /** Models one connection may subscribe to. */
    static final int MAX_SUBSCRIPTIONS_PER_CONNECTION = 10_000;

    /** The event loop, the server channel and every connection. */
    private final ServerLoops loops;

    private final AtomicBoolean closed = new AtomicBoolean();
    private final String host;
    private final int port;
    private final String name;
    private final ServerSecurity security;
    /** Checks the signature and the version of each publication from a connection. */
    private final ManifestTrust trust;

    // Confined to the event loop.
    private final Map<String, Latest> latest = new HashMap<>();
    private final Map<String, Set<Connection>> subscribers = new HashMap<>();
    private long retainedBytes;

    private record Latest(long version, Announcement announcement) {}

    private Broker(
            ServerLoops loops, Channel serverChannel, String host, ServerSecurity security, ManifestTrust trust) {
        this.loops = loops;
        this.trust = trust;
        this.host = host;
        this.security = security;
        this.port = ((InetSocketAddress) serverChannel.localAddress()).getPort();
        this.name = "embedded broker " + new NotifyProtocol.Endpoint(host, port);
    }

    /**
     * Starts a broker on {@code host:port} (port 0: any free port) with {@code config}'s credentials, TLS and limits
     * ({@link ServerSecurity}).
     *
     * @throws BindException when the address is in use (another broker may answer there)
     * @throws ViperConfigException when it must not start (no secret beyond loopback) or a setting is unusable
     */
    public static Broker bind(String host, int port, ViperConfig config) throws BindException {
        InetAddress address;
        try {
            address = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new ViperConfigException("embedded broker: unknown host '" + host + "'");
        }
        if (port < 0 || port > 65_535) {
            throw new ViperConfigException("embedded broker: port " + port + " is outside 0..65535");
        }
        ServerSecurity security = ServerSecurity.forServer(config, "embedded", new InetSocketAddress(address, port));
        ManifestTrust trust = ManifestTrust.fromConfig(config);
        ServerLoops loops = new ServerLoops("viper-notify-broker", 1);
        Broker[] self = new Broker[1];
        try {
            ServerBootstrap b = new ServerBootstrap()
                    .group(loops.group())
                    .channel(NioServerSocketChannel.class)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childOption(ChannelOption.SO_KEEPALIVE, true)
                    .childOption(
                            ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 * 1024, 1024 * 1024))
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            Broker broker = self[0];
                            if (broker == null) {
                                ch.close(); // bind has not returned yet
                                return;
                            }
                            loops.add(ch); // closes ch at once when the broker is closed already
                            security.install(ch);
                            ch.pipeline()
                                    .addLast(
                                            new IdleStateHandler(security.idleMs(), 0, 0, TimeUnit.MILLISECONDS),
                                            NotifyProtocol.frameDecoder(security.maxFrame(NotifyProtocol.MAX_FRAME)),
                                            NotifyDecoder.fromClients(),
                                            broker.new Connection());
                        }
                    });
            ChannelFuture f = b.bind(new InetSocketAddress(address, port)).awaitUninterruptibly();
            if (!f.isSuccess()) {
                if (f.cause() instanceof BindException be) {
                    throw be;
                }
                throw new RetriableViperException(
                        ViperException.Reason.UNAVAILABLE,
                        "embedded broker: cannot listen on " + new NotifyProtocol.Endpoint(host, port) + ": "
                                + f.cause(),
                        f.cause());
            }
            loops.add(f.channel());
            self[0] = new Broker(loops, f.channel(), host, security, trust);
            LOG.log(Level.INFO, self[0].name + " listening");
            return self[0];
        } catch (BindException | RuntimeException e) {
            loops.abandon();
            throw e;
        }
    }

    public String host() {
        return host;
    }

    public int port() {
        return port;
    }

    /** {@code embedded://host:port} with the bound port. */
    public URI uri() {
        return NotifyProtocol.Endpoint.uri(host, port);
    }

    /** Closes every connection and stops the event loop; waits for that unless called on it. Idempotent. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        loops.close();
        LOG.log(Level.INFO, name + " stopped");
    }

    private void publish(Connection from, ChannelHandlerContext ctx, NotifyMessage.Publish request) {
        if (!ServerSecurity.role(ctx.channel()).mayPublish()) {
            String reason = name + ": refused publish of " + request.model() + " from " + from.peer
                    + ": it authenticated with a consumer token, which cannot publish";
            LOG.log(Level.WARNING, reason);
            ctx.writeAndFlush(NotifyProtocol.error(
                            ctx.alloc(), request.requestId(), NotifyProtocol.ERR_FORBIDDEN, reason))
                    .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
            return;
        }
        NotifyMessage answer = accept(from.peer, request.requestId(), request.model(), request.announcement(), null);
        ByteBuf reply = switch (answer) {
            case NotifyMessage.Ack ack ->
                NotifyProtocol.ack(ctx.alloc(), ack.requestId(), ack.status(), ack.latestVersion());
            case NotifyMessage.Error e -> NotifyProtocol.error(ctx.alloc(), e.requestId(), e.code(), e.reason());
            default -> throw new IllegalStateException("unexpected answer " + answer);
        };
        ctx.writeAndFlush(reply).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
    }

    /**
     * A publication from a notifier in this process (the producer that hosts this broker): the same checks and
     * forwarding as one that arrives on a connection, without the trip through a socket and the client's event loop.
     * Completes with the {@link NotifyMessage.Ack} or {@link NotifyMessage.Error} the connection would have received.
     * Any thread.
     */
    CompletableFuture<NotifyMessage> publishLocal(String model, Manifest manifest, Announcement announcement) {
        CompletableFuture<NotifyMessage> answer = new CompletableFuture<>();
        try {
            loops.group()
                    .next()
                    .execute(() -> answer.complete(accept("this process", 0, model, announcement, manifest)));
        } catch (RejectedExecutionException e) {
            answer.completeExceptionally(new ViperClosedException(name + " is closed"));
        }
        return answer;
    }

    /**
     * Checks a publication, keeps it as the model's latest and forwards it; returns the answer to the publisher.
     * {@code decoded}: the manifest the announcement encodes, when it comes from this process and needs no decoding;
     * null to decode it. Event loop only.
     */
    private NotifyMessage accept(
            String peer, long requestId, String model, Announcement announcement, Manifest decoded) {
        Manifest m;
        Latest current = latest.get(model);
        try {
            String where = name + ": publish of " + model + " from " + peer;
            // A publication from this process was signed here; one from a connection must prove it.
            m = decoded != null ? decoded : ManifestCodec.decode(trust.open(announcement.manifest(), where), where);
            if (!m.model().equals(model)) {
                throw new ViperFormatException(
                        name,
                        "publish from " + peer + " names model " + model + " but carries a manifest of " + m.model());
            }
            if (!announcement.fits(m)) {
                throw new ViperFormatException(
                        name,
                        "publish of " + model + " v" + m.version() + " from " + peer + " carries "
                                + announcement.data().length + " bytes of a version of " + m.totalBytes());
            }
            trust.checkVersion(model, current == null ? 0 : current.version(), m.version(), where);
        } catch (ViperException e) {
            LOG.log(Level.WARNING, "refused: " + e.getMessage());
            return new NotifyMessage.Error(requestId, NotifyProtocol.ERR_FORMAT, e.getMessage());
        }
        if (current != null && m.version() == current.version() && !sameContent(current, m)) {
            LOG.log(
                    Level.WARNING,
                    name + ": refused publish of " + model + " v" + m.version() + " from " + peer
                            + ": it holds another v" + current.version()
                            + " (other tensors); a version is never reused");
            return new NotifyMessage.Ack(requestId, NotifyProtocol.STALE, current.version());
        }
        if (current != null && m.version() < current.version()) {
            LOG.log(
                    Level.WARNING,
                    name + ": refused publish of " + model + " v" + m.version() + " from " + peer
                            + ": it already holds v" + current.version());
            return new NotifyMessage.Ack(requestId, NotifyProtocol.STALE, current.version());
        }
        long retained =
                retainedBytes - (current == null ? 0 : current.announcement().size()) + announcement.size();
        if (retained > MAX_RETAINED_BYTES && announcement.data().length > 0) {
            // The bytes only spare subscribers a fetch: drop them rather than refuse the version.
            retained -= announcement.data().length;
            announcement = Announcement.of(announcement.manifest());
        }
        if ((current == null && latest.size() >= MAX_MODELS) || retained > MAX_RETAINED_BYTES) {
            String reason = name + ": refused publish of " + model + " v" + m.version() + ": the broker holds "
                    + latest.size() + " models and " + retainedBytes + " bytes of announcements, its limit";
            LOG.log(Level.WARNING, reason);
            return new NotifyMessage.Error(requestId, NotifyProtocol.ERR_LIMIT, reason);
        }
        latest.put(model, new Latest(m.version(), announcement));
        retainedBytes = retained;
        Set<Connection> subs = subscribers.getOrDefault(model, Set.of());
        LOG.log(
                Level.DEBUG,
                () -> name + ": " + model + " v" + m.version() + " from " + peer + " to " + subs.size()
                        + " subscriber(s)");
        for (Connection c : subs) {
            c.send(model, announcement);
        }
        return new NotifyMessage.Ack(requestId, NotifyProtocol.ACCEPTED, m.version());
    }

    /** Whether {@code m} describes the bytes {@code current} does: then it is a location update of that version. */
    private boolean sameContent(Latest current, Manifest m) {
        try {
            return ManifestCodec.decode(current.announcement().manifest(), name).sameContent(m);
        } catch (ViperException e) {
            return false;
        }
    }

    /**
     * One client connection, serving the messages {@link NotifyDecoder} decodes ahead of it; lives on the broker's
     * event loop.
     */
    private final class Connection extends ChannelInboundHandlerAdapter {
        private final Set<String> models = new HashSet<>();
        /** Newest manifest per model not yet written because the channel was not writable. */
        private final Map<String, Announcement> pending = new LinkedHashMap<>();

        private ChannelHandlerContext ctx;
        private String peer = "?";
        private boolean failed;

        @Override
        public void channelActive(ChannelHandlerContext ctx) throws Exception {
            this.ctx = ctx;
            this.peer = String.valueOf(ctx.channel().remoteAddress());
            super.channelActive(ctx);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (failed) {
                return;
            }
            switch ((NotifyMessage) msg) {
                case NotifyMessage.Hello h ->
                    ctx.writeAndFlush(NotifyProtocol.welcome(ctx.alloc(), security.idleMs()))
                            .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
                case NotifyMessage.Subscribe sub -> subscribe(ctx, sub.model());
                case NotifyMessage.Unsubscribe unsub -> unsubscribe(unsub.model());
                case NotifyMessage.Publish publish -> publish(this, ctx, publish);
                case NotifyMessage.Latest q -> {
                    Latest l = latest.get(q.model());
                    ctx.writeAndFlush(NotifyProtocol.ack(
                                    ctx.alloc(), q.requestId(), NotifyProtocol.KNOWN, l == null ? 0 : l.version()))
                            .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
                }
                default -> fail(ctx, "unexpected message " + msg); // the decoder passes only the five above
            }
        }

        private void subscribe(ChannelHandlerContext ctx, String model) {
            if (!models.contains(model) && models.size() >= MAX_SUBSCRIPTIONS_PER_CONNECTION) {
                fail(ctx, "more than " + MAX_SUBSCRIPTIONS_PER_CONNECTION + " subscriptions on one connection");
                return;
            }
            models.add(model);
            subscribers.computeIfAbsent(model, k -> new LinkedHashSet<>()).add(this);
            Latest l = latest.get(model);
            if (l != null) {
                send(model, l.announcement());
            }
        }

        private void unsubscribe(String model) {
            models.remove(model);
            pending.remove(model);
            Set<Connection> subs = subscribers.get(model);
            if (subs != null) {
                subs.remove(this);
                if (subs.isEmpty()) {
                    subscribers.remove(model);
                }
            }
        }

        void send(String model, Announcement announcement) {
            if (ctx == null || failed || !ctx.channel().isActive()) {
                return;
            }
            long queued = queuedBytes();
            if (queued > 0 && queued + announcement.size() > security.bufferBytes()) {
                fail(
                        ctx,
                        "does not read its manifests: " + (queued + announcement.size())
                                + " bytes would be queued for it, more than viper.limits.buffer.bytes "
                                + security.bufferBytes());
                return;
            }
            if (!pending.isEmpty() || !ctx.channel().isWritable()) {
                pending.remove(model);
                pending.put(model, announcement);
                if (ctx.channel().isWritable()) {
                    drainPending();
                }
                return;
            }
            ctx.writeAndFlush(NotifyProtocol.manifest(ctx.alloc(), model, announcement))
                    .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        }

        /** Bytes written to the socket but not sent yet, and manifests held back for it. */
        private long queuedBytes() {
            ChannelOutboundBuffer out = ctx.channel().unsafe().outboundBuffer();
            long n = out == null ? 0 : out.totalPendingWriteBytes();
            for (Announcement a : pending.values()) {
                n += a.size();
            }
            return n;
        }

        private void drainPending() {
            boolean wrote = false;
            for (Iterator<Map.Entry<String, Announcement>> it =
                            pending.entrySet().iterator();
                    it.hasNext() && ctx.channel().isWritable(); ) {
                Map.Entry<String, Announcement> e = it.next();
                it.remove();
                ctx.write(NotifyProtocol.manifest(ctx.alloc(), e.getKey(), e.getValue()))
                        .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
                wrote = true;
            }
            if (wrote) {
                ctx.flush();
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) throws Exception {
            if (ctx.channel().isWritable() && !pending.isEmpty()) {
                drainPending();
            }
            super.channelWritabilityChanged(ctx);
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
            if (evt instanceof IdleStateEvent e && e.state() == IdleState.READER_IDLE) {
                fail(
                        ctx,
                        "sent nothing for " + security.idleMs()
                                + " ms (viper.limits.idle.ms; clients send HELLO more often than that)");
                return;
            }
            super.userEventTriggered(ctx, evt);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            for (String model : List.copyOf(models)) {
                unsubscribe(model);
            }
            pending.clear();
            super.channelInactive(ctx);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof NotifyDecoder.MalformedFrameException) {
                fail(ctx, cause.getMessage());
            } else if (cause instanceof DecoderException) {
                fail(ctx, "malformed frame: " + cause.getMessage());
            } else if (cause instanceof IOException) {
                LOG.log(Level.DEBUG, () -> name + ": connection from " + peer + " broke: " + cause.getMessage());
                ctx.close();
            } else {
                LOG.log(
                        Level.WARNING,
                        name + ": closing connection from " + peer + " after an unexpected error",
                        cause);
                ctx.close();
            }
        }

        private void fail(ChannelHandlerContext ctx, String reason) {
            if (failed) {
                return;
            }
            failed = true;
            pending.clear();
            LOG.log(Level.WARNING, name + ": closing connection from " + peer + ": " + reason);
            if (ctx.channel().isActive()) {
                ctx.writeAndFlush(NotifyProtocol.error(ctx.alloc(), 0, NotifyProtocol.ERR_PROTOCOL, reason))
                        .addListener(ChannelFutureListener.CLOSE);
            }
        }
    }
}
