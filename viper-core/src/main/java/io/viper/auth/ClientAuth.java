package io.viper.auth;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Locale;
import java.util.Optional;

/**
 * A client's side of the {@link Handshake}: the notifier clients and the transport clients run one {@link Attempt} at
 * the start of each connection. With a secret the client proves the role it acts in and requires the server to prove
 * the same key back, so it never trusts a server that does not hold it (a stranger on the port, a forged location);
 * without one it connects only to servers that do not ask for credentials. Thread-safe; an attempt belongs to one
 * connection.
 */
public final class ClientAuth {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Optional<Secret> secret;
    private final Role role;

    private ClientAuth(Optional<Secret> secret, Role role) {
        this.secret = secret;
        this.role = role;
    }

    /**
     * The credentials of a client acting as {@code role}, from {@code viper.auth.secret.file}.
     *
     * @throws ViperConfigException when the secret does not grant {@code role} (a consumer token cannot publish) or the
     *     file is unusable
     */
    public static ClientAuth of(ViperConfig config, Role role) {
        return of(Secret.fromConfig(config), role);
    }

    /** The credentials of a client acting as {@code role} with {@code secret}, or none. */
    public static ClientAuth of(Optional<Secret> secret, Role role) {
        if (secret.isPresent() && !secret.get().grants(role)) {
            throw new ViperConfigException(
                    secret.get() + " does not grant the " + role.name().toLowerCase(Locale.ROOT)
                            + " role: a consumer token cannot publish; use the producer secret");
        }
        return new ClientAuth(secret, role);
    }

    /** Whether this client has credentials to prove. */
    public boolean hasSecret() {
        return secret.isPresent();
    }

    /** Starts the handshake of a new connection to {@code peer} (for messages) speaking {@code protocol}. */
    public Attempt attempt(String protocol, String peer) {
        return new Attempt(protocol, peer);
    }

    /**
     * The handshake of one connection: {@link #proof} answers the server's challenge, {@link #verdict} checks its
     * answer.
     */
    public final class Attempt {
        private final String protocol;
        private final String peer;
        private final byte[] clientNonce = new byte[Handshake.NONCE_BYTES];
        private byte[] serverNonce;
        private boolean proved;

        private Attempt(String protocol, String peer) {
            this.protocol = protocol;
            this.peer = peer;
            RANDOM.nextBytes(clientNonce);
        }

        /** The PROOF frame body answering the server's CHALLENGE frame body. */
        public byte[] proof(byte[] challenge) throws Handshake.Refused {
            ByteBuffer b =
                    Handshake.open(challenge, "server (no handshake challenge)", 5 + Handshake.NONCE_BYTES, peer);
            boolean required = (b.get() & Handshake.FLAG_REQUIRED) != 0;
            serverNonce = Handshake.read(b, Handshake.NONCE_BYTES, "challenge", peer);
            if (secret.isEmpty()) {
                if (required) {
                    throw new Handshake.Refused(
                            peer + " requires credentials: set " + ViperConfig.AUTH_SECRET_FILE.name(), true);
                }
                return Handshake.proof(0, clientNonce, new byte[Handshake.NONCE_BYTES]);
            }
            if (!required) {
                throw new Handshake.Refused(
                        peer + " does not authenticate (it has no " + ViperConfig.AUTH_SECRET_FILE.name()
                                + "), so it cannot prove it holds this client's secret; not trusting it",
                        true);
            }
            proved = true;
            byte[] key = secret.get().key(role).orElseThrow();
            return Handshake.proof(
                    role.code(),
                    clientNonce,
                    Handshake.mac(key, "client", protocol, role.code(), serverNonce, clientNonce));
        }

        /**
         * Checks the server's VERDICT frame body: accepted, and with its proof of the same key when this client proved
         * one.
         */
        public void verdict(byte[] verdict) throws Handshake.Refused {
            ByteBuffer b = Handshake.open(verdict, "handshake verdict", 5 + Handshake.NONCE_BYTES + 2, peer);
            int status = b.get() & 0xff;
            byte[] mac = Handshake.read(b, Handshake.NONCE_BYTES, "verdict", peer);
            int n = b.getShort() & 0xffff;
            String reason =
                    new String(Handshake.read(b, Math.min(n, b.remaining()), "verdict", peer), StandardCharsets.UTF_8);
            if (status != Handshake.ACCEPTED) {
                throw new Handshake.Refused(peer + " refused this client: " + reason, true);
            }
            if (proved
                    && !Handshake.same(
                            mac,
                            Handshake.mac(
                                    secret.orElseThrow().key(role).orElseThrow(),
                                    "server",
                                    protocol,
                                    role.code(),
                                    serverNonce,
                                    clientNonce))) {
                throw new Handshake.Refused(
                        peer + " did not prove it holds this client's secret; not trusting it", true);
            }
        }
    }
}
