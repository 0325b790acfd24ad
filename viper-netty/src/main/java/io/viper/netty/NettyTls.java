package io.viper.netty;

import io.netty.buffer.ByteBufAllocator;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.viper.ViperConfig;
import io.viper.auth.Secret;
import io.viper.errors.ViperConfigException;
import java.nio.file.Path;
import java.util.Optional;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;

/**
 * Netty TLS contexts from the PEM files the {@code viper.tls.*} keys name: a server presents
 * {@code viper.tls.cert.file} with {@code viper.tls.key.file} (which, like the secret, only its owner may read); a
 * client trusts {@code viper.tls.trust.file} (or the JDK's defaults) and checks that the certificate names the host it
 * dialled. The JDK's TLS implementation, no native library. Stateless.
 */
final class NettyTls {
    private NettyTls() {}

    /** The server's context, or empty when {@code viper.tls.enabled} is false. */
    static Optional<SslContext> server(ViperConfig config, String what) {
        if (!config.get(ViperConfig.TLS_ENABLED)) {
            return Optional.empty();
        }
        Path cert = config.get(ViperConfig.TLS_CERT_FILE)
                .orElseThrow(() -> new ViperConfigException(what + ": " + ViperConfig.TLS_ENABLED.name()
                        + " is set but " + ViperConfig.TLS_CERT_FILE.name() + " is not"));
        Path key = config.get(ViperConfig.TLS_KEY_FILE)
                .orElseThrow(() -> new ViperConfigException(what + ": " + ViperConfig.TLS_ENABLED.name()
                        + " is set but " + ViperConfig.TLS_KEY_FILE.name() + " is not"));
        Secret.requirePrivate(key, ViperConfig.TLS_KEY_FILE.name() + " " + key);
        try {
            return Optional.of(SslContextBuilder.forServer(cert.toFile(), key.toFile())
                    .sslProvider(SslProvider.JDK)
                    .build());
        } catch (SSLException | IllegalArgumentException e) {
            throw new ViperConfigException(what + ": cannot use " + cert + " and " + key
                    + " for TLS (PEM certificate chain and unencrypted PKCS#8 key): " + e.getMessage());
        }
    }

    /** The client's context, or empty when {@code viper.tls.enabled} is false. */
    static Optional<SslContext> client(ViperConfig config) {
        if (!config.get(ViperConfig.TLS_ENABLED)) {
            return Optional.empty();
        }
        SslContextBuilder b = SslContextBuilder.forClient().sslProvider(SslProvider.JDK);
        Optional<Path> trust = config.get(ViperConfig.TLS_TRUST_FILE);
        try {
            trust.ifPresent(t -> b.trustManager(t.toFile()));
            return Optional.of(b.build());
        } catch (SSLException | IllegalArgumentException e) {
            throw new ViperConfigException(ViperConfig.TLS_TRUST_FILE.name() + " "
                    + trust.map(Path::toString).orElse("") + ": not PEM certificates: " + e.getMessage());
        }
    }

    /** A client handler for {@code host:port} that checks the certificate names that host. */
    static SslHandler clientHandler(SslContext ctx, ByteBufAllocator alloc, String host, int port) {
        SslHandler h = ctx.newHandler(alloc, host, port);
        SSLEngine engine = h.engine();
        SSLParameters params = engine.getSSLParameters();
        params.setEndpointIdentificationAlgorithm("HTTPS");
        engine.setSSLParameters(params);
        return h;
    }
}
