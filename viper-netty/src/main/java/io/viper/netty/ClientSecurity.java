package io.viper.netty;

import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.SslContext;
import io.viper.ViperConfig;
import io.viper.auth.ClientAuth;
import io.viper.auth.Role;
import java.util.Optional;

/**
 * What a Netty client of Viper (the embedded notifier) does when its connection opens, made once per
 * client: {@link #install} puts TLS ({@code viper.tls.*}) and the client's side of the
 * authentication handshake at the head of the pipeline. The protocol handler behind them starts
 * speaking when it sees {@link #AUTHENTICATED}; a failed handshake reaches its
 * {@code exceptionCaught} as a {@link HandshakeFailed} whose message says why. Thread-safe.
 */
public final class ClientSecurity {
    /** The handshake failed: the server refused this client, is no Viper server of this version, or could not prove it holds the secret. */
    public static final class HandshakeFailed extends DecoderException {
        HandshakeFailed(String message) {
            super(message);
        }

        @Override
        public synchronized Throwable fillInStackTrace() {
            return this; // the message says it all
        }
    }

    /** The user event fired once the server accepted this client (and proved its own key, with a secret). */
    public static final Object AUTHENTICATED = new Object() {
        @Override
        public String toString() {
            return "AUTHENTICATED";
        }
    };

    private final ClientAuth auth;
    private final Optional<SslContext> tls;
    private final String protocol;

    private ClientSecurity(ClientAuth auth, Optional<SslContext> tls, String protocol) {
        this.auth = auth;
        this.tls = tls;
        this.protocol = protocol;
    }

    /**
     * A {@code protocol} client acting as {@code role}.
     *
     * @throws io.viper.errors.ViperConfigException when the secret does not grant the role, or a file is unusable
     */
    public static ClientSecurity of(ViperConfig config, String protocol, Role role) {
        return new ClientSecurity(ClientAuth.of(config, role), NettyTls.client(config), protocol);
    }

    /** Adds TLS (checking the certificate names {@code host}) and the handshake to a new connection to {@code host:port}. */
    public void install(SocketChannel ch, String host, int port) {
        tls.ifPresent(ctx -> ch.pipeline().addLast(NettyTls.clientHandler(ctx, ch.alloc(), host, port)));
        ch.pipeline().addLast(new ClientAuthHandler(auth.attempt(protocol, protocol + "://" + host + ":" + port)));
    }
}
