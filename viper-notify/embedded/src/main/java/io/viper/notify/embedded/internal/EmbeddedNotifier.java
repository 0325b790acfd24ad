package io.viper.notify.embedded.internal;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.errors.ViperTimeoutException;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.netty.ClientSecurity;
import io.viper.notify.embedded.internal.NotifyMessage.Ack;
import io.viper.notify.embedded.internal.NotifyProtocol.Endpoint;
import io.viper.spi.Notifier;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A client of the embedded broker, implementing {@link Notifier} for both roles.
 *
 * <p>Threads: one Netty event loop ({@code viper-notify-client-*}) owns the connection and all
 * subscription state; one dispatcher thread ({@code viper-notify-listener-*}) calls listeners, one
 * call at a time, in the order manifests arrived, except {@linkplain ManifestListener#quick() quick}
 * ones, which the event loop calls itself. Both are daemon threads and stop on {@link #close()}.
 *
 * <p>A notifier that hosts its broker ({@code ownedBroker}) hands its publications to it directly,
 * without the connection; subscriptions always go through the connection.
 *
 * <p>The connection is kept up for the notifier's lifetime: when the broker is not there yet or goes
 * away, the client retries with exponential backoff (100 ms doubling to 2 s), logs one line per
 * change of state and tells listeners through {@code onProblem}; once back it re-subscribes every
 * model and re-publishes the newest manifest it published per model (so a restarted broker regains
 * its state). Listeners see a manifest only if it is newer than, or a changed republication of, the
 * last one they saw for the model. A broker that refuses this client's credentials (or requires some
 * it has none of, or cannot prove its own), or whose TLS does not match this client's (a certificate
 * this client refuses, no TLS where this client asks for it: {@link ClientSecurity.HandshakeFailed}),
 * is not tried again: the notifier stops connecting, a waiting call throws the refusal as a
 * {@link ViperConfigException}, and listeners hear it through {@code onFailure}. A broker not up
 * yet, or a connection that breaks during a handshake, is retried.
 */
public final class EmbeddedNotifier implements Notifier {
    private static final System.Logger LOG = System.getLogger(EmbeddedNotifier.class.getName());
    private static final long BACKOFF_START_MS = 100;
    private static final long BACKOFF_MAX_MS = 2_000;
    private static final long CONNECT_WAIT_MAX_MS = 5_000;

    private enum State { CONNECTING, CONNECTED, DISCONNECTED, REFUSED, CLOSED }

    private final Endpoint endpoint;
    private final String name;
    private final URI uri;
    private final long timeoutMs;
    private final long connectWaitMs;
    private final Broker ownedBroker;
    /** Whether this notifier started its broker on a fixed port: consumers of an earlier broker there may hold versions it never saw. */
    private final boolean freshBrokerOnFixedPort;
    private final EventLoopGroup group;
    private final EventLoop loop;
    private final ExecutorService dispatcher;
    private final Bootstrap bootstrap;
    private final AtomicLong requestIds = new AtomicLong();
    private final Map<Long, CompletableFuture<NotifyMessage>> pendingPublishes = new java.util.concurrent.ConcurrentHashMap<>();

    // Confined to the event loop.
    private final Map<String, ModelState> models = new HashMap<>();
    private final Map<String, Published> lastPublished = new LinkedHashMap<>();
    private State state = State.CONNECTING;
    private Channel candidate;
    private boolean attemptInProgress;
    private CompletableFuture<Void> nextConnection = new CompletableFuture<>();
    private ScheduledFuture<?> reconnect;
    private long backoffMs = BACKOFF_START_MS;
    private String lastProblem = "";
    /** Why the broker refused this client, once it did: no attempt follows. */
    private volatile ViperConfigException refusedBy;

    /** The ready connection (WELCOME received), or null; written on the event loop. */
    private volatile Channel channel;
    private volatile boolean closed;

    private record Published(long version, Announcement announcement) {
    }

    /** Subscriptions of one model and the last manifest delivered to them. */
    private static final class ModelState {
        final List<Sub> subs = new ArrayList<>();
        Announcement lastAnnouncement;
        Manifest last;
    }

    private final class Sub implements Subscription {
        final String model;
        final ManifestListener listener;
        volatile boolean subClosed;

        Sub(String model, ManifestListener listener) {
            this.model = model;
            this.listener = listener;
        }

        /** @param data the version's bytes that came with the manifest; empty: none */
        void deliver(Manifest m, byte[] data) {
            if (subClosed) {
                return;
            }
            try {
                if (data.length > 0) {
                    listener.onManifest(m, MemorySegment.ofArray(data).asReadOnly());
                } else {
                    listener.onManifest(m);
                }
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, name + ": listener of " + model + " failed on v" + m.version() + ": " + e, e);
            }
        }

        void failure(ViperException failure) {
            tell("onFailure", () -> listener.onFailure(failure));
        }

        void problem(String problem) {
            tell("onProblem", () -> listener.onProblem(problem));
        }

        /** Calls the listener's {@code method} unless closed; what it throws is logged. */
        private void tell(String method, Runnable call) {
            if (subClosed) {
                return;
            }
            try {
                call.run();
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, name + ": listener of " + model + " failed in " + method + ": " + e, e);
            }
        }

        @Override
        public void close() {
            if (subClosed) {
                return;
            }
            subClosed = true;
            runOnLoop(() -> {
                ModelState ms = models.get(model);
                if (ms != null && ms.subs.remove(this) && ms.subs.isEmpty()) {
                    models.remove(model);
                    Channel ch = channel;
                    if (ch != null) {
                        ch.writeAndFlush(NotifyProtocol.modelFrame(ch.alloc(), NotifyProtocol.UNSUBSCRIBE, model))
                                .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
                    }
                }
            });
        }
    }

    /**
     * Opens a client of the broker at {@code endpoint}. With {@code waitForBroker} (producers) the
     * first connection must succeed within the timeout; otherwise (consumers) it is made in the
     * background. {@code timeoutMs} ({@code viper.notify.timeout.ms}) bounds a publish's wait for its
     * acknowledgement and that first connection. {@code ownedBroker}, if not null, is closed with this notifier;
     * {@code freshBrokerOnFixedPort} says that it was just started on a port consumers may have known before.
     * Every connection starts with TLS and the authentication handshake {@code security} installs.
     */
    public static EmbeddedNotifier connect(Endpoint endpoint, URI advertised, long timeoutMs, boolean waitForBroker,
                                           Broker ownedBroker, boolean freshBrokerOnFixedPort, ClientSecurity security) {
        EmbeddedNotifier n = new EmbeddedNotifier(endpoint, advertised, timeoutMs, ownedBroker, freshBrokerOnFixedPort, security);
        n.runOnLoop(n::attempt);
        if (waitForBroker) {
            try {
                n.awaitConnection(timeoutMs);
            } catch (RuntimeException e) {
                n.close();
                throw e;
            }
        }
        return n;
    }

    private EmbeddedNotifier(Endpoint endpoint, URI advertised, long timeoutMs, Broker ownedBroker, boolean freshBrokerOnFixedPort,
                             ClientSecurity security) {
        this.endpoint = endpoint;
        this.freshBrokerOnFixedPort = freshBrokerOnFixedPort;
        this.uri = advertised;
        this.name = "notifier " + advertised;
        this.timeoutMs = timeoutMs;
        this.connectWaitMs = Math.min(timeoutMs, CONNECT_WAIT_MAX_MS);
        this.ownedBroker = ownedBroker;
        String tag = Integer.toString(endpoint.port());
        this.group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("viper-notify-client-" + tag, true), NioIoHandler.newFactory());
        this.loop = group.next();
        this.dispatcher = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("viper-notify-listener-" + tag).factory());
        this.bootstrap = new Bootstrap()
                .group(group)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.SO_KEEPALIVE, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) connectWaitMs)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        security.install(ch, endpoint.host(), endpoint.port());
                        ch.pipeline().addLast(NotifyProtocol.frameDecoder(), NotifyDecoder.fromBroker(), new Handler());
                    }
                });
    }

    @Override
    public URI uri() {
        return uri;
    }

    // ---------------------------------------------------------------- connection management (event loop)

    /** Starts a connection attempt unless one runs or the connection is up. */
    private void attempt() {
        if (closed || attemptInProgress || channel != null || refusedBy != null) {
            return;
        }
        if (reconnect != null) {
            reconnect.cancel(false);
            reconnect = null;
        }
        attemptInProgress = true;
        bootstrap.connect(endpoint.host(), endpoint.port()).addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) {
                attemptFailed(describe(f.cause()));
                return;
            }
            Channel ch = f.channel();
            if (closed) {
                ch.close();
                return;
            }
            // HELLO goes out once the handshake succeeded (Handler.userEventTriggered).
            candidate = ch;
            ch.eventLoop().schedule(() -> {
                if (candidate == ch && channel != ch) {
                    closeWith(ch, "no handshake and WELCOME within " + connectWaitMs + " ms (is this a Viper broker?)");
                }
            }, connectWaitMs, TimeUnit.MILLISECONDS);
        });
    }

    private void attemptFailed(String problem) {
        attemptFailed(problem, false);
    }

    /** {@code refused}: the handshake or TLS failed as {@link ClientSecurity.HandshakeFailed} says: not a matter of trying again. */
    private void attemptFailed(String problem, boolean refused) {
        attemptInProgress = false;
        candidate = null;
        lastProblem = problem;
        CompletableFuture<Void> waiting = nextConnection;
        if (refused) {
            refused(waiting, new ViperConfigException(name + ": " + problem));
            return;
        }
        nextConnection = new CompletableFuture<>();
        waiting.completeExceptionally(new RetriableViperException(ViperException.Reason.UNAVAILABLE, name + ": broker unreachable: " + problem));
        if (closed) {
            return;
        }
        if (state != State.DISCONNECTED) {
            State before = state;
            state = State.DISCONNECTED;
            String line = before == State.CONNECTING
                    ? name + ": broker unreachable (" + problem + "); retrying with backoff"
                    : name + ": lost the broker (" + problem + "); reconnecting with backoff";
            LOG.log(Level.WARNING, line);
            tellListeners(line);
        }
        long delay = backoffMs;
        backoffMs = Math.min(BACKOFF_MAX_MS, backoffMs * 2);
        reconnect = loop.schedule(this::attempt, delay, TimeUnit.MILLISECONDS);
    }

    /**
     * Stops connecting for good: trying again cannot change credentials or TLS trust. Whoever waits
     * for the connection gets {@code refusal}, and so does every later wait; listeners hear it once.
     * Logged at DEBUG only: the caller that gets the exception, or the listener, reports it.
     */
    private void refused(CompletableFuture<Void> waiting, ViperConfigException refusal) {
        refusedBy = refusal;
        nextConnection = CompletableFuture.failedFuture(refusal);
        waiting.completeExceptionally(refusal);
        if (closed) {
            return;
        }
        state = State.REFUSED;
        LOG.log(Level.DEBUG, () -> refusal.getMessage() + "; not trying again");
        for (ModelState ms : models.values()) {
            for (Sub s : ms.subs) {
                dispatch(() -> s.failure(refusal));
            }
        }
    }

    private void connected(Channel ch, long brokerIdleMs) {
        attemptInProgress = false;
        candidate = null;
        backoffMs = BACKOFF_START_MS;
        // The broker closes a connection silent for brokerIdleMs: a HELLO now and then keeps this one open.
        long every = Math.max(10, brokerIdleMs / 3);
        ScheduledFuture<?> heartbeat = ch.eventLoop().scheduleAtFixedRate(
                () -> ch.writeAndFlush(NotifyProtocol.empty(ch.alloc(), NotifyProtocol.HELLO)), every, every, TimeUnit.MILLISECONDS);
        ch.closeFuture().addListener(f -> heartbeat.cancel(false));
        // Restore the session before anyone else may write: subscriptions, then our latest publications.
        for (String model : models.keySet()) {
            ch.write(NotifyProtocol.modelFrame(ch.alloc(), NotifyProtocol.SUBSCRIBE, model)).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        }
        for (Map.Entry<String, Published> e : lastPublished.entrySet()) {
            ch.write(NotifyProtocol.publish(ch.alloc(), 0, e.getKey(), e.getValue().announcement())).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        }
        ch.flush();
        channel = ch;
        if (state != State.CONNECTED) {
            String line = name + ": connected to the broker" + (state == State.DISCONNECTED ? " again" : "");
            LOG.log(state == State.DISCONNECTED ? Level.INFO : Level.DEBUG, line
                    + (models.isEmpty() ? "" : "; subscribed to " + models.size() + " model(s)"));
            state = State.CONNECTED;
        }
        CompletableFuture<Void> waiting = nextConnection;
        nextConnection = new CompletableFuture<>();
        waiting.complete(null);
    }

    private void disconnected(Channel ch, String problem) {
        if (candidate == ch) {
            attemptFailed(problem, ch.attr(REFUSED).get() != null);
            return;
        }
        if (channel != ch) {
            return;
        }
        channel = null;
        for (Long id : List.copyOf(pendingPublishes.keySet())) {
            CompletableFuture<NotifyMessage> f = pendingPublishes.remove(id);
            if (f != null) {
                f.completeExceptionally(new RetriableViperException(ViperException.Reason.UNAVAILABLE,
                        name + ": connection to the broker lost before it acknowledged the publish: " + problem));
            }
        }
        attemptFailed(problem);
    }

    private void closeWith(Channel ch, String problem) {
        if (ch.isActive()) {
            LOG.log(Level.DEBUG, () -> name + ": closing the broker connection: " + problem);
        }
        lastProblem = problem;
        ch.attr(PROBLEM).set(problem);
        ch.close();
    }

    private static final io.netty.util.AttributeKey<String> PROBLEM = io.netty.util.AttributeKey.valueOf("viper.notify.problem");
    private static final io.netty.util.AttributeKey<Boolean> REFUSED = io.netty.util.AttributeKey.valueOf("viper.notify.refused");

    private static String describe(Throwable t) {
        if (t == null) {
            return "unknown error";
        }
        Throwable c = t;
        while (c.getCause() != null && c.getMessage() == null) {
            c = c.getCause();
        }
        return c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
    }

    private void tellListeners(String problem) {
        for (ModelState ms : models.values()) {
            for (Sub s : ms.subs) {
                dispatch(() -> s.problem(problem));
            }
        }
    }

    private void dispatch(Runnable r) {
        try {
            dispatcher.execute(r);
        } catch (RejectedExecutionException e) {
            // Closed: nothing is delivered any more.
        }
    }

    private void runOnLoop(Runnable r) {
        try {
            if (loop.inEventLoop()) {
                r.run();
            } else {
                loop.execute(r);
            }
        } catch (RejectedExecutionException e) {
            // The loop is shutting down (close): nothing left to do.
        }
    }

    /** Waits until connected, starting an attempt at once if none runs. */
    private Channel awaitConnection(long waitMs) {
        Channel ch = channel;
        if (ch != null) {
            return ch;
        }
        checkOpen();
        checkNotRefused();
        CompletableFuture<CompletableFuture<Void>> next = new CompletableFuture<>();
        runOnLoop(() -> {
            attempt();
            next.complete(channel != null ? CompletableFuture.completedFuture(null) : nextConnection);
        });
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(waitMs);
        try {
            CompletableFuture<Void> outcome = next.get(waitMs, TimeUnit.MILLISECONDS);
            outcome.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ViperException ve) {
                throw ve;
            }
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, name + ": broker unreachable: " + describe(e.getCause()), e.getCause());
        } catch (TimeoutException e) {
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, name + ": broker unreachable within " + waitMs + " ms"
                    + (lastProblem.isEmpty() ? "" : ": " + lastProblem));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, name + ": interrupted while connecting to the broker");
        }
        ch = channel;
        if (ch == null) {
            checkOpen();
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, name + ": broker connection lost again: " + lastProblem);
        }
        return ch;
    }

    // ---------------------------------------------------------------- API

    /** True when this notifier hosts its broker: a publish is a hand-off to the broker's event loop in this process. */
    @Override
    public boolean publishesLocally() {
        return ownedBroker != null;
    }

    @Override
    public void publish(Manifest manifest) {
        publish(manifest, Announcement.NO_DATA);
    }

    /** Copies {@code data} and announces it with the manifest: a subscriber swaps it in without fetching it. */
    @Override
    public void publish(Manifest manifest, MemorySegment data) {
        publish(manifest, Notifier.inlineBytes(manifest, data));
    }

    /**
     * Hands the publication to the broker this notifier hosts and returns: the broker's event loop
     * checks and forwards it; the future completes with its answer.
     */
    @Override
    public CompletableFuture<Void> publishLocally(Manifest manifest, MemorySegment data) {
        if (ownedBroker == null) {
            throw new UnsupportedOperationException(name + ": the broker is not in this process");
        }
        Announcement announcement = announcement(manifest, Notifier.inlineBytes(manifest, data));
        return ownedBroker.publishLocal(manifest.model(), manifest, announcement).thenAccept(answer -> accepted(manifest, answer));
    }

    private void publish(Manifest manifest, byte[] data) {
        Announcement announcement = announcement(manifest, data);
        String what = manifest.model() + " v" + manifest.version();
        NotifyMessage answer;
        if (ownedBroker != null) {
            // The broker lives in this process: hand it the publication directly (it cannot restart
            // without this notifier, so nothing needs re-publishing after a reconnect), with the
            // manifest it need not decode again.
            answer = awaitAnswer(ownedBroker.publishLocal(manifest.model(), manifest, announcement), "publish of " + what);
        } else {
            runOnLoop(() -> {
                Published p = lastPublished.get(manifest.model());
                if (p == null || p.version() <= manifest.version()) {
                    lastPublished.put(manifest.model(), new Published(manifest.version(), announcement));
                }
            });
            answer = request((ch, id) -> NotifyProtocol.publish(ch.alloc(), id, manifest.model(), announcement), "publish of " + what);
        }
        accepted(manifest, answer);
    }

    /** What a publish sends: the encoded manifest (checked against the size limit) and {@code data}. */
    private Announcement announcement(Manifest manifest, byte[] data) {
        checkOpen();
        byte[] bytes = ManifestCodec.encode(manifest);
        if (bytes.length > ManifestCodec.MAX_ENCODED_BYTES) {
            throw new ViperFormatException(name, "manifest of " + manifest.model() + " v" + manifest.version() + " encodes to "
                    + bytes.length + " bytes, over the limit of " + ManifestCodec.MAX_ENCODED_BYTES);
        }
        return new Announcement(bytes, data);
    }

    /** Returns when the broker accepted {@code manifest}; throws its refusal otherwise. */
    private void accepted(Manifest manifest, NotifyMessage answer) {
        Ack a = acknowledgement(answer);
        if (a.status() == NotifyProtocol.STALE) {
            throw new ViperConfigException(name + ": the broker refused " + manifest.model() + " v" + manifest.version() + ": it holds "
                    + (a.latestVersion() == manifest.version() ? "another " : "") + "v" + a.latestVersion() + " of " + manifest.model()
                    + " (versions of a model only grow and are never reused; is another producer announcing it?)");
        }
    }

    /**
     * Asks the broker. An embedded broker this notifier just started on a fixed port has no history
     * that consumers of an earlier producer at that address may have seen: then empty, unless a
     * version was announced to it meanwhile.
     */
    @Override
    public OptionalLong latestVersion(String model) {
        Manifest.validateModelName(model);
        checkOpen();
        long latest;
        try {
            latest = acknowledgement(request((ch, id) -> NotifyProtocol.latest(ch.alloc(), id, model), "the latest version of " + model)).latestVersion();
        } catch (RetriableViperException e) {
            LOG.log(Level.WARNING, name + ": cannot learn the latest version of " + model + ": " + e.getMessage());
            return OptionalLong.empty();
        }
        return latest == 0 && freshBrokerOnFixedPort ? OptionalLong.empty() : OptionalLong.of(latest);
    }

    /** The broker's ACK; its ERROR thrown as the refusal it is. */
    private Ack acknowledgement(NotifyMessage answer) {
        return switch (answer) {
            case Ack a -> a;
            case NotifyMessage.Error e -> throw refusal(e);
            default -> throw new ViperException(ViperException.Reason.INTERNAL, name + ": unexpected answer " + answer);
        };
    }

    /** Sends the frame {@code request} builds for a new request id over the connection and waits for the ACK (or ERROR) naming that id. */
    private NotifyMessage request(java.util.function.BiFunction<Channel, Long, io.netty.buffer.ByteBuf> request, String what) {
        Channel ch = awaitConnection(connectWaitMs);
        long id = requestIds.incrementAndGet();
        CompletableFuture<NotifyMessage> answer = new CompletableFuture<>();
        pendingPublishes.put(id, answer);
        ch.writeAndFlush(request.apply(ch, id)).addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) {
                CompletableFuture<NotifyMessage> p = pendingPublishes.remove(id);
                if (p != null) {
                    p.completeExceptionally(new RetriableViperException(ViperException.Reason.UNAVAILABLE,
                            name + ": sending the " + what + " to the broker failed: " + describe(f.cause()), f.cause()));
                }
            }
        });
        // The channel may have gone inactive before the request was registered; its failure is then reported by the write.
        try {
            return awaitAnswer(answer, what);
        } finally {
            pendingPublishes.remove(id);
        }
    }

    /** Waits for the broker's answer to a request ({@code viper.notify.timeout.ms} at most). */
    private NotifyMessage awaitAnswer(CompletableFuture<NotifyMessage> answer, String what) {
        try {
            return answer.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ViperException ve) {
                throw ve;
            }
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, name + ": " + what + " failed: " + describe(e.getCause()), e.getCause());
        } catch (TimeoutException e) {
            throw new ViperTimeoutException(name + ": the broker did not answer the " + what + " within " + timeoutMs + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, name + ": interrupted during the " + what);
        }
    }

    /** The exception a refused publication throws. */
    private ViperException refusal(NotifyMessage.Error error) {
        return error.code() == NotifyProtocol.ERR_FORMAT
                ? new ViperFormatException(name, "the broker refused the manifest: " + error.reason())
                : new ViperConfigException(name + ": the broker refused the publish: " + error.reason());
    }

    @Override
    public Subscription subscribe(String model, ManifestListener listener) {
        Manifest.validateModelName(model);
        if (listener == null) {
            throw new ViperConfigException(name + ": subscribe to " + model + " without a listener");
        }
        checkOpen();
        Sub sub = new Sub(model, listener);
        runOnLoop(() -> {
            if (sub.subClosed) {
                return;
            }
            ModelState ms = models.get(model);
            if (ms == null) {
                ms = new ModelState();
                models.put(model, ms);
                ms.subs.add(sub);
                Channel ch = channel;
                if (ch != null) {
                    ch.writeAndFlush(NotifyProtocol.modelFrame(ch.alloc(), NotifyProtocol.SUBSCRIBE, model))
                            .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
                }
            } else {
                ms.subs.add(sub);
                Manifest last = ms.last;
                byte[] lastData = last == null ? null : ms.lastAnnouncement.data();
                if (last != null) {
                    if (listener.quick()) {
                        sub.deliver(last, lastData); // in order with later manifests, which the loop delivers itself
                    } else {
                        dispatch(() -> sub.deliver(last, lastData));
                    }
                }
            }
            if (state == State.DISCONNECTED) {
                dispatch(() -> sub.problem(name + ": broker unreachable (" + lastProblem + "); retrying with backoff"));
            } else if (state == State.REFUSED) {
                dispatch(() -> sub.failure(refusedBy));
            }
        });
        return sub;
    }

    private void onManifest(String model, Announcement announcement) {
        ModelState ms = models.get(model);
        if (ms == null) {
            return; // Unsubscribed meanwhile.
        }
        Manifest m;
        try {
            m = ManifestCodec.decode(announcement.manifest(), name + ": manifest of " + model);
            if (!m.model().equals(model)) {
                throw new ViperFormatException(name, "a manifest of " + m.model() + " arrived as one of " + model);
            }
            if (!announcement.fits(m)) {
                throw new ViperFormatException(name, "the manifest of " + model + " v" + m.version() + " came with " + announcement.data().length
                        + " bytes of a version of " + m.totalBytes());
            }
        } catch (ViperException e) {
            LOG.log(Level.WARNING, "skipped: " + e.getMessage());
            for (Sub s : ms.subs) {
                dispatch(() -> s.problem("skipped: " + e.getMessage()));
            }
            return;
        }
        if (ms.last != null && (m.version() < ms.last.version() || Arrays.equals(announcement.manifest(), ms.lastAnnouncement.manifest()))) {
            return; // Older than, or the same as, what the listeners already have (a replay after reconnecting).
        }
        ms.last = m;
        ms.lastAnnouncement = announcement;
        for (Sub s : ms.subs) {
            if (s.listener.quick()) {
                s.deliver(m, announcement.data()); // here on the event loop: one hand-off less before the consumer fetches
            } else {
                dispatch(() -> s.deliver(m, announcement.data()));
            }
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new ViperClosedException(name + " is closed");
        }
    }

    /** Throws the broker's refusal of this client, once it refused: no connection will come. */
    private void checkNotRefused() {
        ViperConfigException refusal = refusedBy;
        if (refusal != null) {
            throw new ViperConfigException(refusal.getMessage());
        }
    }

    /**
     * Closes the connection, stops the threads (waiting briefly for a listener call in progress unless
     * called from a listener) and, when this notifier hosts the broker, stops the broker. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        runOnLoop(() -> {
            state = State.CLOSED;
            if (reconnect != null) {
                reconnect.cancel(false);
            }
            Channel ch = channel != null ? channel : candidate;
            if (ch != null) {
                ch.close();
            }
            nextConnection.completeExceptionally(new ViperClosedException(name + " is closed"));
        });
        for (CompletableFuture<NotifyMessage> f : pendingPublishes.values()) {
            f.completeExceptionally(new ViperClosedException(name + " closed before the broker acknowledged"));
        }
        var terminated = group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        dispatcher.shutdown();
        if (!loop.inEventLoop()) {
            terminated.awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        if (!Thread.currentThread().getName().startsWith("viper-notify-listener-")) {
            try {
                dispatcher.awaitTermination(2, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (ownedBroker != null) {
            ownedBroker.close();
        }
    }

    /** Inbound messages of one connection, as {@link NotifyDecoder} decodes them ahead of it; runs on the event loop. */
    private final class Handler extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Channel ch = ctx.channel();
            switch ((NotifyMessage) msg) {
                case NotifyMessage.Welcome w -> {
                    if (candidate == ch && channel == null) {
                        connected(ch, w.idleMs());
                    }
                }
                case NotifyMessage.Manifest m -> onManifest(m.model(), m.announcement());
                case NotifyMessage.Ack ack -> {
                    CompletableFuture<NotifyMessage> p = pendingPublishes.remove(ack.requestId());
                    if (p != null) {
                        p.complete(ack);
                    }
                }
                case NotifyMessage.Error error -> {
                    CompletableFuture<NotifyMessage> p = error.requestId() == 0 ? null : pendingPublishes.remove(error.requestId());
                    if (p != null) {
                        p.complete(error);
                    } else {
                        LOG.log(Level.WARNING, name + ": the broker reported: " + error.reason());
                    }
                }
                default -> closeWith(ch, "unexpected message from the broker: " + msg); // the decoder passes only the four above
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) throws Exception {
            String problem = ctx.channel().attr(PROBLEM).get();
            disconnected(ctx.channel(), problem != null ? problem : "connection closed by the broker");
            super.channelInactive(ctx);
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
            if (evt == ClientSecurity.AUTHENTICATED) {
                ctx.writeAndFlush(NotifyProtocol.empty(ctx.alloc(), NotifyProtocol.HELLO)).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
                return;
            }
            super.userEventTriggered(ctx, evt);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof ClientSecurity.HandshakeFailed) {
                ctx.channel().attr(REFUSED).set(Boolean.TRUE);
                closeWith(ctx.channel(), cause.getMessage());
                return;
            }
            if (cause instanceof NotifyDecoder.MalformedFrameException) {
                LOG.log(Level.WARNING, name + ": closing the broker connection: " + cause.getMessage());
                closeWith(ctx.channel(), "malformed frame from the broker: " + cause.getMessage());
                return;
            }
            String problem = cause instanceof DecoderException ? "malformed frame from the broker: " + describe(cause) : describe(cause);
            if (cause instanceof DecoderException) {
                LOG.log(Level.WARNING, name + ": closing the broker connection: " + problem);
            }
            closeWith(ctx.channel(), problem);
        }
    }
}
