package io.viper.netty;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.handler.ssl.SslContext;
import io.viper.ViperConfig;
import io.viper.auth.ClientAuth;
import io.viper.auth.Role;
import io.viper.net.Tls;
import java.util.Optional;

/**
 * What a Netty client of Viper (the embedded notifier) does when its connection opens, made once per client:
 * {@link #install} puts TLS ({@code viper.tls.*}) and the client's side of the authentication handshake at the head of
 * the pipeline. The protocol handler behind them starts speaking when it sees {@link #AUTHENTICATED}; a failed
 * handshake reaches its {@code exceptionCaught} as a {@link HandshakeFailed} whose message says why. So does a TLS
 * handshake that failed because this client refused the server's certificate or the server answered without TLS, which
 * trying again cannot change either; any other TLS failure (a connection that broke during the handshake, a timeout)
 * passes as it came. Thread-safe.
 */
public final class ClientSecurity {
    /**
     * The handshake failed: the server refused this client, is no Viper server of this version, could not prove it
     * holds the secret, presented a TLS certificate this client refuses, or does not speak TLS.
     */
    public static final class HandshakeFailed extends DecoderException {
        private static final long serialVersionUID = 1L;

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

    /**
     * Adds TLS (checking the certificate names {@code host}) and the handshake to a new connection to
     * {@code host:port}.
     */
    public void install(SocketChannel ch, String host, int port) {
        String peer = protocol + "://" + host + ":" + port;
        tls.ifPresent(ctx ->
                ch.pipeline().addLast(NettyTls.clientHandler(ctx, ch.alloc(), host, port), new TlsRefusal(peer)));
        ch.pipeline().addLast(new ClientAuthHandler(auth.attempt(protocol, peer)));
    }

    /**
     * Right behind the {@code SslHandler}: passes a TLS failure that trying again cannot change on as a
     * {@link HandshakeFailed}.
     */
    private static final class TlsRefusal extends ChannelInboundHandlerAdapter {
        private final String peer;

        TlsRefusal(String peer) {
            this.peer = peer;
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            Optional<String> untrusted = Tls.certificateRefused(cause);
            if (untrusted.isPresent()) {
                ctx.fireExceptionCaught(new HandshakeFailed(
                        peer + " presents a TLS certificate this client refuses: " + untrusted.get()));
            } else if (cause instanceof DecoderException && cause.getCause() instanceof NotSslRecordException) {
                ctx.fireExceptionCaught(new HandshakeFailed(
                        peer + " answered without TLS, which " + ViperConfig.TLS_ENABLED.name() + " asks of it"));
            } else {
                ctx.fireExceptionCaught(cause);
            }
        }
    }
}
