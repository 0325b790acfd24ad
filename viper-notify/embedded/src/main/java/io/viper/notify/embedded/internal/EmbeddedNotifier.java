package io.viper.notify.embedded.internal;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.viper.auth.ManifestTrust;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperFormatException;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.netty.ClientSecurity;
import io.viper.notify.embedded.internal.NotifyMessage.Ack;
import io.viper.notify.embedded.internal.NotifyProtocol.Endpoint;
import io.viper.spi.Notifier;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;

/**
 * A client of the embedded broker, implementing {@link Notifier} for both roles.
 *
 * <p>Threads: one Netty event loop ({@code viper-notify-client-*}) owns the connection and all subscription state
 * ({@link BrokerLink}); one dispatcher thread ({@code viper-notify-listener-*}) calls listeners, one call at a time, in
 * the order manifests arrived, except {@linkplain ManifestListener#quick() quick} ones, which the event loop calls
 * itself (the delivery rules are {@link io.viper.spi.AnnouncementFeed}'s). Both are daemon threads and stop on
 * {@link #close()}.
 *
 * <p>A notifier that hosts its broker ({@code ownedBroker}) hands its publications to it directly, without the
 * connection; subscriptions always go through the connection.
 *
 * <p>The connection is kept up for the notifier's lifetime: when the broker is not there yet or goes away, the client
 * retries with exponential backoff (100 ms doubling to 2 s), logs one line per change of state and tells listeners
 * through {@code onProblem}; once back it re-subscribes every model and re-publishes the newest manifest it published
 * per model (so a restarted broker regains its state). Listeners see a manifest only if it is newer than, or a changed
 * republication of, the last one they saw for the model. A broker that refuses this client's credentials (or requires
 * some it has none of, or cannot prove its own), or whose TLS does not match this client's (a certificate this client
 * refuses, no TLS where this client asks for it: {@link ClientSecurity.HandshakeFailed}), is not tried again: the
 * notifier stops connecting, a waiting call throws the refusal as a {@link ViperConfigException}, and listeners hear it
 * through {@code onFailure}. A broker not up yet, or a connection that breaks during a handshake, is retried.
 */
public final class EmbeddedNotifier implements Notifier {
    private static final System.Logger LOG = System.getLogger(EmbeddedNotifier.class.getName());
    private static final long CONNECT_WAIT_MAX_MS = 5_000;
    private static final String DISPATCHER_THREAD = "viper-notify-listener-";

    private final String name;
    private final URI uri;
    private final long connectWaitMs;
    private final Broker ownedBroker;
    /**
     * Whether this notifier started its broker on a fixed port: consumers of an earlier broker there may hold versions
     * it never saw.
     */
    private final boolean freshBrokerOnFixedPort;
    /** Signs what this notifier publishes; its link checks what it receives. */
    private final ManifestTrust trust;

    private final ExecutorService dispatcher;
    private final PendingRequests requests;
    private final BrokerLink link;
    private volatile boolean closed;

    /**
     * Opens a client of the broker at {@code endpoint}. With {@code waitForBroker} (producers) the first connection
     * must succeed within the timeout; otherwise (consumers) it is made in the background. {@code timeoutMs}
     * ({@code viper.notify.timeout.ms}) bounds a publish's wait for its acknowledgement and that first connection.
     * {@code ownedBroker}, if not null, is closed with this notifier; {@code freshBrokerOnFixedPort} says that it was
     * just started on a port consumers may have known before. Every connection starts with TLS and the authentication
     * handshake {@code security} installs; {@code trust} signs what it publishes and checks what it hears.
     */
    public static EmbeddedNotifier connect(
            Endpoint endpoint,
            URI advertised,
            long timeoutMs,
            boolean waitForBroker,
            Broker ownedBroker,
            boolean freshBrokerOnFixedPort,
            ClientSecurity security,
            ManifestTrust trust) {
        EmbeddedNotifier n = new EmbeddedNotifier(
                endpoint, advertised, timeoutMs, ownedBroker, freshBrokerOnFixedPort, security, trust);
        n.link.start();
        if (waitForBroker) {
            try {
                n.link.awaitConnection(timeoutMs);
            } catch (RuntimeException e) {
                n.close();
                throw e;
            }
        }
        return n;
    }

    private EmbeddedNotifier(
            Endpoint endpoint,
            URI advertised,
            long timeoutMs,
            Broker ownedBroker,
            boolean freshBrokerOnFixedPort,
            ClientSecurity security,
            ManifestTrust trust) {
        this.trust = trust;
        this.freshBrokerOnFixedPort = freshBrokerOnFixedPort;
        this.uri = advertised;
        this.name = "notifier " + advertised;
        this.connectWaitMs = Math.min(timeoutMs, CONNECT_WAIT_MAX_MS);
        this.ownedBroker = ownedBroker;
        this.dispatcher = Executors.newSingleThreadExecutor(Thread.ofPlatform()
                .daemon()
                .name(DISPATCHER_THREAD + endpoint.port())
                .factory());
        this.requests = new PendingRequests(name, timeoutMs);
        this.link = new BrokerLink(endpoint, name, connectWaitMs, security, requests, dispatcher, trust);
    }

    @Override
    public URI uri() {
        return uri;
    }

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
     * Hands the publication to the broker this notifier hosts and returns: the broker's event loop checks and forwards
     * it; the future completes with its answer.
     */
    @Override
    public CompletableFuture<Void> publishLocally(Manifest manifest, MemorySegment data) {
        if (ownedBroker == null) {
            throw new UnsupportedOperationException(name + ": the broker is not in this process");
        }
        Announcement announcement = announcement(manifest, Notifier.inlineBytes(manifest, data));
        return ownedBroker
                .publishLocal(manifest.model(), manifest, announcement)
                .thenAccept(answer -> accepted(manifest, answer));
    }

    private void publish(Manifest manifest, byte[] data) {
        Announcement announcement = announcement(manifest, data);
        String what = manifest.model() + " v" + manifest.version();
        NotifyMessage answer;
        if (ownedBroker != null) {
            // The broker lives in this process: hand it the publication directly (it cannot restart
            // without this notifier, so nothing needs re-publishing after a reconnect), with the
            // manifest it need not decode again.
            answer = requests.await(
                    ownedBroker.publishLocal(manifest.model(), manifest, announcement), "publish of " + what);
        } else {
            link.republish(manifest.model(), manifest.version(), announcement);
            answer = request(
                    (ch, id) -> NotifyProtocol.publish(ch.alloc(), id, manifest.model(), announcement),
                    "publish of " + what);
        }
        accepted(manifest, answer);
    }

    /** What a publish sends: the encoded manifest (checked against the size limit) and {@code data}. */
    private Announcement announcement(Manifest manifest, byte[] data) {
        checkOpen();
        byte[] bytes = trust.seal(ManifestCodec.encode(manifest));
        if (bytes.length > ManifestCodec.MAX_ENCODED_BYTES) {
            throw new ViperFormatException(
                    name,
                    "manifest of " + manifest.model() + " v" + manifest.version() + " encodes to " + bytes.length
                            + " bytes, over the limit of " + ManifestCodec.MAX_ENCODED_BYTES);
        }
        return new Announcement(bytes, data);
    }

    /** Returns when the broker accepted {@code manifest}; throws its refusal otherwise. */
    private void accepted(Manifest manifest, NotifyMessage answer) {
        Ack a = acknowledgement(answer);
        if (a.status() == NotifyProtocol.STALE) {
            throw new ViperConfigException(
                    name + ": the broker refused " + manifest.model() + " v" + manifest.version() + ": it holds "
                            + (a.latestVersion() == manifest.version() ? "another " : "") + "v" + a.latestVersion()
                            + " of " + manifest.model()
                            + " (versions of a model only grow and are never reused; is another producer announcing"
                            + " it?)");
        }
    }

    /**
     * Asks the broker. An embedded broker this notifier just started on a fixed port has no history that consumers of
     * an earlier producer at that address may have seen: then empty, unless a version was announced to it meanwhile.
     */
    @Override
    public OptionalLong latestVersion(String model) {
        Manifest.validateModelName(model);
        checkOpen();
        long latest;
        try {
            latest = acknowledgement(request(
                            (ch, id) -> NotifyProtocol.latest(ch.alloc(), id, model), "the latest version of " + model))
                    .latestVersion();
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

    /** Sends a request over the connection (waiting for it first) and waits for the broker's answer. */
    private NotifyMessage request(BiFunction<Channel, Long, ByteBuf> request, String what) {
        return requests.send(link.awaitConnection(connectWaitMs), request, what);
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
        return link.feed().subscribe(model, listener);
    }

    private void checkOpen() {
        if (closed) {
            throw new ViperClosedException(name + " is closed");
        }
    }

    /**
     * Closes the connection, stops the threads (waiting briefly for a listener call in progress unless called from a
     * listener) and, when this notifier hosts the broker, stops the broker. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        var terminated = link.close();
        requests.failAll(() -> new ViperClosedException(name + " closed before the broker acknowledged"));
        dispatcher.shutdown();
        if (!link.inEventLoop()) {
            terminated.awaitUninterruptibly(5, TimeUnit.SECONDS);
        }
        if (!Thread.currentThread().getName().startsWith(DISPATCHER_THREAD)) {
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
}
