package io.viper.net;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import java.util.Optional;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManagerFactory;

/**
 * The client side of TLS for the connections Viper makes with plain NIO ({@code tcp://} reads, over
 * {@link FrameChannel}): which certificates to trust and how to check the server. With {@code viper.tls.enabled},
 * clients trust the PEM certificates of {@code viper.tls.trust.file} (or the JDK's default trust store) and require the
 * server's certificate to name the host they dialled, as HTTPS clients do. Stateless.
 */
public final class Tls {
    /** "sun.security.provider.certpath.SunCertPathBuilderException: " inside a JDK message. */
    private static final Pattern QUOTED_CLASS = Pattern.compile("\\b(?:[a-z][a-z0-9_]*\\.)+[A-Z]\\w*: ");

    private Tls() {}

    /**
     * The context clients connect with, or empty when {@code viper.tls.enabled} is false.
     *
     * @throws ViperConfigException when the trust file is missing or holds no certificate
     */
    public static Optional<SSLContext> client(ViperConfig config) {
        if (!config.get(ViperConfig.TLS_ENABLED)) {
            return Optional.empty();
        }
        Optional<Path> trust = config.get(ViperConfig.TLS_TRUST_FILE);
        String what = ViperConfig.TLS_TRUST_FILE.name() + " "
                + trust.map(Path::toString).orElse("");
        try {
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            if (trust.isEmpty()) {
                tmf.init((KeyStore) null);
            } else {
                KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
                store.load(null, null);
                Collection<? extends Certificate> certs;
                try (InputStream in = Files.newInputStream(trust.get())) {
                    certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
                }
                if (certs.isEmpty()) {
                    throw new ViperConfigException(what + ": holds no PEM certificate");
                }
                int i = 0;
                for (Certificate c : certs) {
                    store.setCertificateEntry("trusted-" + i++, c);
                }
                tmf.init(store);
            }
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return Optional.of(ctx);
        } catch (IOException e) {
            throw new ViperConfigException(what + ": cannot read: " + e.getMessage());
        } catch (GeneralSecurityException e) {
            throw new ViperConfigException(
                    what + ": not PEM certificates: " + innermost(e).getMessage());
        }
    }

    /** The root cause: a certificate parser's own message repeats its cause's class name. */
    private static Throwable innermost(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    /**
     * Why this client refused the server's certificate (not trusted, expired, or naming another host) when
     * {@code failure}, a TLS handshake's or one it caused, is such a refusal, in the JDK's words without the class
     * names it quotes; else empty. Trying again with the same trust fails the same way, unlike a connection that broke
     * during the handshake.
     */
    public static Optional<String> certificateRefused(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof CertificateException) {
                String why = t.getMessage() == null ? innermost(t).toString() : t.getMessage();
                return Optional.of(QUOTED_CLASS.matcher(why).replaceAll(""));
            }
        }
        return Optional.empty();
    }

    /** A client engine for {@code host:port} that checks the certificate names that host. */
    public static SSLEngine clientEngine(SSLContext ctx, String host, int port) {
        SSLEngine engine = ctx.createSSLEngine(host, port);
        engine.setUseClientMode(true);
        SSLParameters params = engine.getSSLParameters();
        params.setEndpointIdentificationAlgorithm("HTTPS");
        engine.setSSLParameters(params);
        return engine;
    }
}
