package io.viper.notify.embedded.internal;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.ScheduledFuture;
import io.viper.auth.ManifestTrust;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.netty.ClientSecurity;
import io.viper.notify.embedded.internal.NotifyProtocol.Endpoint;
import io.viper.spi.AnnouncementFeed;
import java.lang.System.Logger.Level;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An {@link EmbeddedNotifier}'s connection to its broker, kept up for the notifier's lifetime, and the subscriptions
 * that ride on it: an {@link AnnouncementFeed} that the broker's MANIFEST frames feed, whose
 * {@link AnnouncementFeed.Demand} sends SUBSCRIBE and UNSUBSCRIBE.
 *
 * <p>Threads: one Netty event loop ({@code viper-notify-client-*}) owns the connection, its state and the feed;
 * {@link #awaitConnection} and {@link #republish} may be called from any thread.
 *
 * <p>When the broker is not there yet or goes away, the link retries with exponential backoff (100 ms doubling to 2 s),
 * logs one line per change of state and tells the feed ({@code trouble}); once back it subscribes every followed model
 * again and re-publishes the newest announcement this notifier published per model (so a restarted broker regains its
 * state). A refusal of this client's credentials or TLS ({@link ClientSecurity.HandshakeFailed}) is final: no attempt
 * follows, waits throw it as a {@link ViperConfigException}, and the feed tells listeners through {@code onFailure}.
 */
final class BrokerLink {
    private static final System.Logger LOG = System.getLogger(EmbeddedNotifier.class.getName());
    private static final long BACKOFF_START_MS = 100;
    private static final long BACKOFF_MAX_MS = 2_000;
    /** Why this client closed a connection, for the line its end logs. */
    private static final AttributeKey<String> PROBLEM = AttributeKey.valueOf("viper.notify.problem");
    /** Set on a connection whose handshake or TLS the broker refused: no attempt follows its end. */
    static final AttributeKey<Boolean> REFUSED = AttributeKey.valueOf("viper.notify.refused");

    private enum State {
        CONNECTING,
        CONNECTED,
        DISCONNECTED,
        REFUSED,
        CLOSED
    }

    private final Endpoint endpoint;
    private final String name;
    private final long connectWaitMs;
    private final PendingRequests requests;
    private final EventLoopGroup group;
    private final EventLoop loop;
    private final Bootstrap bootstrap;
    private final AnnouncementFeed feed;

    // Confined to the event loop.
    private final Map<String, Published> lastPublished = new LinkedHashMap<>();
    private State state = State.CONNECTING;
    private Channel candidate;
    private boolean attemptInProgress;
    private CompletableFuture<Void> nextConnection = new CompletableFuture<>();
    private ScheduledFuture<?> reconnect;
    private long backoffMs = BACKOFF_START_MS;
    private String lastProblem = "";

    private record Published(long version, Announcement announcement) {}

    /** Why the broker refused this client, once it did: no attempt follows. */
    private volatile ViperConfigException refusedBy;
    /** The ready connection (WELCOME received), or null; written on the event loop. */
    private volatile Channel channel;

    private volatile boolean closed;

    /**
     * A link to the broker at {@code endpoint}, not connecting yet ({@link #start()}): every connection starts with the
     * TLS and authentication handshake {@code security} installs, and must be ready within {@code connectWaitMs}.
     * Listeners other than quick ones are called by {@code dispatcher}.
     */
    BrokerLink(
            Endpoint endpoint,
            String name,
            long connectWaitMs,
            ClientSecurity security,
            PendingRequests requests,
            Executor dispatcher,
            ManifestTrust trust) {
        this.endpoint = endpoint;
        this.name = name;
        this.connectWaitMs = connectWaitMs;
        this.requests = requests;
        String tag = Integer.toString(endpoint.port());
        this.group = new MultiThreadIoEventLoopGroup(
                1, new DefaultThreadFactory("viper-notify-client-" + tag, true), NioIoHandler.newFactory());
        this.loop = group.next();
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
                        ch.pipeline()
                                .addLast(
                                        NotifyProtocol.frameDecoder(),
                                        NotifyDecoder.fromBroker(),
                                        new BrokerHandler(BrokerLink.this, name));
                    }
                });
        this.feed = new AnnouncementFeed(
                name,
                LOG,
                this::runOnLoop,
                dispatcher,
                new AnnouncementFeed.Demand() {
                    @Override
                    public void follow(String model) {
                        send(NotifyProtocol.SUBSCRIBE, model);
                    }

                    @Override
                    public void unfollow(String model) {
                        send(NotifyProtocol.UNSUBSCRIBE, model);
                    }
                },
                trust);
    }

    /** The subscriptions of this notifier, fed the broker's MANIFEST frames. */
    AnnouncementFeed feed() {
        return feed;
    }

    /** Starts the first connection attempt. */
    void start() {
        runOnLoop(this::attempt);
    }

    /**
     * Remembers {@code announcement} as the newest of {@code model} this notifier published, for re-publishing after a
     * reconnect.
     */
    void republish(String model, long version, Announcement announcement) {
        runOnLoop(() -> {
            Published before = lastPublished.get(model);
            if (before == null || before.version() <= version) {
                lastPublished.put(model, new Published(version, announcement));
            }
        });
    }

    /** A SUBSCRIBE or UNSUBSCRIBE of {@code model} over the connection, if it is up (else the next one subscribes). */
    private void send(byte type, String model) {
        Channel ch = channel;
        if (ch != null) {
            ch.writeAndFlush(NotifyProtocol.modelFrame(ch.alloc(), type, model))
                    .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        }
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
                attemptFailed(describe(f.cause()), false);
                return;
            }
            Channel ch = f.channel();
            if (closed) {
                ch.close();
                return;
            }
            // HELLO goes out once the handshake succeeded (Handler.userEventTriggered).
            candidate = ch;
            ch.eventLoop()
                    .schedule(
                            () -> {
                                if (candidate == ch && channel != ch) {
                                    closeWith(
                                            ch,
                                            "no handshake and WELCOME within " + connectWaitMs
                                                    + " ms (is this a Viper broker?)");
                                }
                            },
                            connectWaitMs,
                            TimeUnit.MILLISECONDS);
        });
    }

    /**
     * {@code refused}: the handshake or TLS failed as {@link ClientSecurity.HandshakeFailed} says: not a matter of
     * trying again.
     */
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
        waiting.completeExceptionally(new RetriableViperException(
                ViperException.Reason.UNAVAILABLE, name + ": broker unreachable: " + problem));
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
            feed.trouble(line);
        }
        long delay = backoffMs;
        backoffMs = Math.min(BACKOFF_MAX_MS, backoffMs * 2);
        reconnect = loop.schedule(this::attempt, delay, TimeUnit.MILLISECONDS);
    }

    /**
     * Stops connecting for good: trying again cannot change credentials or TLS trust. Whoever waits for the connection
     * gets {@code refusal}, and so does every later wait; listeners hear it once. Logged at DEBUG only: the caller that
     * gets the exception, or the listener, reports it.
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
        feed.failed(refusal);
    }

    /** The broker's WELCOME on {@code ch}: the connection is ready, unless it is not the attempt under way. */
    void welcomed(Channel ch, long brokerIdleMs) {
        if (candidate == ch && channel == null) {
            connected(ch, brokerIdleMs);
        }
    }

    private void connected(Channel ch, long brokerIdleMs) {
        attemptInProgress = false;
        candidate = null;
        backoffMs = BACKOFF_START_MS;
        // The broker closes a connection silent for brokerIdleMs: a HELLO now and then keeps this one open.
        long every = Math.max(10, brokerIdleMs / 3);
        ScheduledFuture<?> heartbeat = ch.eventLoop()
                .scheduleAtFixedRate(
                        () -> ch.writeAndFlush(NotifyProtocol.empty(ch.alloc(), NotifyProtocol.HELLO)),
                        every,
                        every,
                        TimeUnit.MILLISECONDS);
        ch.closeFuture().addListener(f -> heartbeat.cancel(false));
        // Restore the session before anyone else may write: subscriptions, then our latest publications.
        List<String> models = feed.models();
        for (String model : models) {
            ch.write(NotifyProtocol.modelFrame(ch.alloc(), NotifyProtocol.SUBSCRIBE, model))
                    .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        }
        for (Map.Entry<String, Published> e : lastPublished.entrySet()) {
            ch.write(NotifyProtocol.publish(
                            ch.alloc(), 0, e.getKey(), e.getValue().announcement()))
                    .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        }
        ch.flush();
        channel = ch;
        if (state != State.CONNECTED) {
            String line = name + ": connected to the broker" + (state == State.DISCONNECTED ? " again" : "");
            LOG.log(
                    state == State.DISCONNECTED ? Level.INFO : Level.DEBUG,
                    line + (models.isEmpty() ? "" : "; subscribed to " + models.size() + " model(s)"));
            state = State.CONNECTED;
            feed.recovered();
        }
        CompletableFuture<Void> waiting = nextConnection;
        nextConnection = new CompletableFuture<>();
        waiting.complete(null);
    }

    /**
     * {@code ch} closed: fails what waits on it and reconnects; the problem is the one {@link #closeWith} named, if
     * any.
     */
    void disconnected(Channel ch) {
        String problem = ch.attr(PROBLEM).get();
        disconnected(ch, problem != null ? problem : "connection closed by the broker");
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
        requests.failAll(() -> new RetriableViperException(
                ViperException.Reason.UNAVAILABLE,
                name + ": connection to the broker lost before it acknowledged the publish: " + problem));
        attemptFailed(problem, false);
    }

    /** Closes {@code ch}, remembering {@code problem} as the reason. */
    void closeWith(Channel ch, String problem) {
        if (ch.isActive()) {
            LOG.log(Level.DEBUG, () -> name + ": closing the broker connection: " + problem);
        }
        lastProblem = problem;
        ch.attr(PROBLEM).set(problem);
        ch.close();
    }

    /** The message of {@code t} or of its first cause that has one; for problem lines. */
    static String describe(Throwable t) {
        if (t == null) {
            return "unknown error";
        }
        Throwable c = t;
        while (c.getCause() != null && c.getMessage() == null) {
            c = c.getCause();
        }
        return c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
    }

    /** Runs {@code r} on the event loop: at once when called there, else queued. */
    void runOnLoop(Runnable r) {
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

    /**
     * Waits up to {@code waitMs} until connected, starting an attempt at once if none runs. Throws the broker's refusal
     * once it refused, a retriable exception when it stays unreachable.
     */
    Channel awaitConnection(long waitMs) {
        Channel ch = channel;
        if (ch != null) {
            return ch;
        }
        checkOpen();
        ViperConfigException refusal = refusedBy;
        if (refusal != null) {
            throw new ViperConfigException(refusal.getMessage());
        }
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
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE,
                    name + ": broker unreachable: " + describe(e.getCause()),
                    e.getCause());
        } catch (TimeoutException e) {
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE,
                    name + ": broker unreachable within " + waitMs + " ms"
                            + (lastProblem.isEmpty() ? "" : ": " + lastProblem));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE, name + ": interrupted while connecting to the broker");
        }
        ch = channel;
        if (ch == null) {
            checkOpen();
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE, name + ": broker connection lost again: " + lastProblem);
        }
        return ch;
    }

    private void checkOpen() {
        if (closed) {
            throw new ViperClosedException(name + " is closed");
        }
    }

    /** Closes the connection and stops the event loop; the returned future completes when it stopped. */
    Future<?> close() {
        closed = true;
        feed.close();
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
        return group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }

    /** The requests waiting for the broker's answer. */
    PendingRequests requests() {
        return requests;
    }

    /** Whether the caller runs on this link's event loop. */
    boolean inEventLoop() {
        return loop.inEventLoop();
    }
}
