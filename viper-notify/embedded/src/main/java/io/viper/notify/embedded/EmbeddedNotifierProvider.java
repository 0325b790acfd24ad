package io.viper.notify.embedded;

import io.viper.ViperConfig;
import io.viper.auth.ManifestTrust;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.netty.ClientSecurity;
import io.viper.notify.embedded.internal.Broker;
import io.viper.notify.embedded.internal.EmbeddedNotifier;
import io.viper.notify.embedded.internal.NotifyProtocol.Endpoint;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import java.net.BindException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;

/**
 * The {@code embedded://host:port} notifier: a small Netty publish/subscribe broker that needs no other process. It
 * listens where the URI says (loopback in the default {@code embedded://127.0.0.1:0}).
 *
 * <h2>Roles</h2>
 *
 * <ul>
 *   <li>{@link Role#PRODUCER}: if nothing listens at {@code host:port}, the broker is started inside this process (port
 *       0 picks a free port; {@link Notifier#uri()} names the real one) and lives until the notifier is closed. If a
 *       broker already answers there (another producer, or {@link EmbeddedBroker} run by {@code viper broker}), the
 *       notifier connects to it instead. {@code open} fails with a {@link RetriableViperException} if the port is taken
 *       but no broker answers within {@code viper.notify.timeout.ms} (at most 5 s).
 *   <li>{@link Role#CONSUMER}: connects in the background and never throws for a missing broker: it retries with
 *       backoff (100 ms doubling to 2 s), logging one line per change of state and reporting it to listeners'
 *       {@code onProblem}, and re-subscribes after reconnecting. A broker that refuses its credentials (or requires
 *       some it has none of), presents a TLS certificate it refuses, or answers without TLS where it asks for TLS is
 *       not tried again: listeners hear the {@link io.viper.errors.ViperConfigException} through {@code onFailure}.
 * </ul>
 *
 * Both roles may publish and subscribe. {@code publish} blocks until the broker acknowledged, up to
 * {@link io.viper.ViperConfig#NOTIFY_TIMEOUT_MS viper.notify.timeout.ms}, and throws a {@link RetriableViperException}
 * when the broker is unreachable. After a reconnect a client re-publishes the newest manifest it published per model,
 * so a restarted standalone broker regains its state from live producers.
 *
 * <h2>Delivery</h2>
 *
 * The broker keeps the latest manifest per model. A subscriber receives it at once, then every accepted publication in
 * order. A publication of a lower version than the broker holds is refused ({@code publish} throws a
 * {@link io.viper.errors.ViperConfigException}); the same version is accepted and delivered again (a location update).
 * {@link Notifier#latestVersion} asks the broker for the newest version it accepted; a broker the producer just started
 * on a fixed port answers empty (it cannot know what consumers of an earlier broker there were told). Listeners run on
 * the notifier's listener thread ({@code viper-notify-listener-<port>}), one call at a time, and never see a version
 * older than one they already received nor the same bytes twice. A subscriber that cannot keep up receives the newest
 * pending manifest per model rather than every intermediate one.
 *
 * <h2>Wire protocol, version 3</h2>
 *
 * Frames: a 4-byte big-endian length {@code N} (at most {@link io.viper.manifest.ManifestCodec#MAX_ENCODED_BYTES} +
 * {@link Notifier#MAX_INLINE_BYTES} + 1024), then {@code N} bytes: a version byte ({@code 3}), a type byte and the
 * payload. {@code str} is a 2-byte length and UTF-8 bytes. An {@code announcement} is a 4-byte manifest length, the
 * {@link io.viper.manifest.ManifestCodec} JSON, then the version's bytes, which fill the rest of the frame: none, or
 * exactly the manifest's total bytes ({@link Notifier#publish(io.viper.manifest.Manifest,
 * java.lang.foreign.MemorySegment)}, at most {@link Notifier#MAX_INLINE_BYTES}).
 *
 * <pre>
 * client -> broker
 *   HELLO       0x01                                    answered by WELCOME (liveness and identity)
 *   SUBSCRIBE   0x02  model:str                         answered by the latest MANIFEST, if any
 *   UNSUBSCRIBE 0x03  model:str
 *   PUBLISH     0x04  requestId:i64 model:str announcement  answered by ACK or ERROR with the request id
 *   LATEST      0x05  requestId:i64 model:str           answered by ACK with status 2 and the newest version (0: none)
 * broker -> client
 *   WELCOME     0x11  idleMs:i64                        viper.limits.idle.ms: the client sends HELLO more often
 *   MANIFEST    0x12  model:str announcement
 *   ACK         0x13  requestId:i64 status:u8 latestVersion:i64   status 0 accepted, 1 refused (older),
 *                                                                 2 LATEST's answer
 *   ERROR       0x14  requestId:i64 code:u8 reason:str            code 1 manifest malformed, 2 broker
 *                                                                 limit, 3 protocol (then closes)
 * </pre>
 *
 * The broker decodes every published manifest and refuses (ERROR, connection kept) one that does not decode, names
 * another model or comes with bytes of another size than the manifest's. It keeps the latest announcement per model,
 * bytes included, and replays it to each new subscriber. A frame that breaks the protocol (bad length, version, type or
 * model name, wrong size) closes that connection with one logged line; the broker serves everyone else on.
 *
 * <p>Stateless and thread-safe; found through {@link java.util.ServiceLoader}.
 */
public final class EmbeddedNotifierProvider implements NotifierProvider {
    /** Public no-argument constructor for {@link java.util.ServiceLoader}. */
    public EmbeddedNotifierProvider() {}

    @Override
    public String scheme() {
        return "embedded";
    }

    @Override
    public Notifier open(URI uri, Role role, ViperConfig config) {
        long timeoutMs = config.get(ViperConfig.NOTIFY_TIMEOUT_MS);
        ManifestTrust trust = ManifestTrust.fromConfig(config);
        if (role == Role.CONSUMER) {
            Endpoint endpoint = Endpoint.parse(uri, false);
            return EmbeddedNotifier.connect(
                    endpoint, endpoint.uri(), timeoutMs, false, null, false, security(config, role), trust);
        }
        Endpoint endpoint = Endpoint.parse(uri, true);
        Broker broker;
        try {
            broker = Broker.bind(endpoint.host(), endpoint.port(), config);
        } catch (BindException inUse) {
            try {
                return EmbeddedNotifier.connect(
                        endpoint, endpoint.uri(), timeoutMs, true, null, false, security(config, role), trust);
            } catch (RetriableViperException e) {
                throw new RetriableViperException(
                        ViperException.Reason.UNAVAILABLE,
                        endpoint + " is in use but no embedded broker answers there: " + e.getMessage(),
                        e);
            }
        }
        try {
            Endpoint local = new Endpoint(connectHost(endpoint.host()), broker.port());
            return EmbeddedNotifier.connect(
                    local, broker.uri(), timeoutMs, true, broker, endpoint.port() != 0, security(config, role), trust);
        } catch (RuntimeException e) {
            broker.close();
            throw e;
        }
    }

    /** The address's form: a host and a port (0 picks a free one for a producer's broker). */
    @Override
    public void check(URI uri, ViperConfig config) {
        Endpoint.parse(uri, true);
    }

    /** A producer's client publishes, so it proves the producer role; a consumer's proves the consumer role. */
    private static ClientSecurity security(ViperConfig config, Role role) {
        return ClientSecurity.of(
                config, "embedded", role == Role.PRODUCER ? io.viper.auth.Role.PRODUCER : io.viper.auth.Role.CONSUMER);
    }

    /** Where this process reaches a broker it bound to {@code host}: loopback for a wildcard address. */
    private static String connectHost(String host) {
        try {
            return InetAddress.getByName(host).isAnyLocalAddress()
                    ? InetAddress.getLoopbackAddress().getHostAddress()
                    : host;
        } catch (UnknownHostException e) {
            return host;
        }
    }
}
