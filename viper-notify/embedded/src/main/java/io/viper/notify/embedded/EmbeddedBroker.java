package io.viper.notify.embedded;

import io.viper.ViperConfig;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.notify.embedded.internal.Broker;
import io.viper.notify.embedded.internal.NotifyProtocol;
import java.net.BindException;
import java.net.URI;

/**
 * A standalone embedded broker, what {@code viper broker --port P} runs: it keeps the latest manifest per model in
 * memory and forwards every publication to the model's subscribers (protocol: {@link EmbeddedNotifierProvider}).
 * Producers and consumers reach it with {@code embedded://host:port}.
 *
 * <p>The broker serves on one daemon event-loop thread of its own ({@code viper-notify-broker-*}); it calls no user
 * code. The caller owns the returned broker and stops it with {@link #close()}, which closes every client connection
 * (clients reconnect with backoff). Thread-safe.
 */
public final class EmbeddedBroker implements AutoCloseable {
    private final Broker broker;

    private EmbeddedBroker(Broker broker) {
        this.broker = broker;
    }

    /**
     * Starts a broker listening on {@code host:port}; {@code host} null means loopback, port 0 any free port (see
     * {@link #port()}). Default settings: no secret, so only on loopback.
     *
     * @throws ViperException ({@code UNAVAILABLE}) when the address is in use or cannot be bound, ({@code CONFIG}) for
     *     an unknown host or a port outside 0..65535
     */
    public static EmbeddedBroker start(String host, int port) {
        return start(host, port, ViperConfig.defaults());
    }

    /**
     * As {@link #start(String, int)}, with {@code config}'s {@code viper.auth.*} credentials (only peers that prove
     * them are served; a server beyond loopback needs them), {@code viper.tls.*} and {@code viper.limits.*}.
     *
     * @throws ViperException ({@code CONFIG}) also when it must not start: no secret beyond loopback, unusable secret
     *     or TLS files
     */
    public static EmbeddedBroker start(String host, int port, ViperConfig config) {
        String h = host == null ? "127.0.0.1" : host;
        try {
            return new EmbeddedBroker(Broker.bind(h, port, config));
        } catch (BindException e) {
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE,
                    "cannot start the embedded broker on " + new NotifyProtocol.Endpoint(h, port) + ": "
                            + e.getMessage(),
                    e);
        }
    }

    /** The host the broker listens on, as given. */
    public String host() {
        return broker.host();
    }

    /** The port the broker listens on (the chosen one when started with port 0). */
    public int port() {
        return broker.port();
    }

    /** {@code embedded://host:port}, what producers and consumers open. */
    public URI uri() {
        return broker.uri();
    }

    /** Stops the broker and closes its connections; waits up to a few seconds. Idempotent. */
    @Override
    public void close() {
        broker.close();
    }

    @Override
    public String toString() {
        return "EmbeddedBroker[" + uri() + "]";
    }
}
