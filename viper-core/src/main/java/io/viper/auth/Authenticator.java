package io.viper.auth;

import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.Locale;
import java.util.Optional;

/**
 * A server's side of the {@link Handshake}: every server that accepts connections (the embedded broker, the
 * {@code tcp://} server, the ucx and GPU control channels, the agent) makes one when it starts, with
 * {@link #forServer}, and runs one {@link Exchange} at the start of each connection, before it reads anything else.
 *
 * <p>Policy: a server authenticates its peers whenever it has a secret: {@code viper.auth.secret.file}, or else this
 * user's own ({@code viper.auth.user.secret}, on by default), which keeps other users of the machine out. Without
 * {@code viper.auth.secret.file} it refuses to start where {@code viper.auth.required} says so: {@code auto} (the
 * default) on any address but loopback, {@code true} everywhere; {@code false} lets it start anyway (and serve every
 * peer that can connect where {@code viper.auth.user.secret=off}). Thread-safe; an exchange belongs to one connection.
 */
public final class Authenticator {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final byte[] NO_MAC = new byte[Handshake.NONCE_BYTES];

    private final String protocol;
    private final Optional<Secret> secret;

    private Authenticator(String protocol, Optional<Secret> secret) {
        this.protocol = protocol;
        this.secret = secret;
    }

    /**
     * The authenticator of a {@code protocol} server (its scheme: {@code tcp}, {@code embedded}, {@code ucx}, ...)
     * bound to {@code bind}.
     *
     * @throws ViperConfigException when the policy above refuses to start the server, naming the address and the key to
     *     set; or when the secret file is unusable
     */
    public static Authenticator forServer(ViperConfig config, String protocol, InetAddress bind) {
        // This user's own secret (viper.auth.user.secret) serves one machine: beyond loopback, and wherever
        // authentication is required, the deployment's secret must be named.
        boolean named = config.get(ViperConfig.AUTH_SECRET_FILE).isPresent();
        String required = config.get(ViperConfig.AUTH_REQUIRED);
        if (!named && (required.equals("true") || (required.equals("auto") && !bind.isLoopbackAddress()))) {
            throw new ViperConfigException(protocol + " server on " + bind.getHostAddress() + ": "
                    + ViperConfig.AUTH_SECRET_FILE.name()
                    + " is not set; a server " + (required.equals("true") ? "" : "on an address other than loopback ")
                    + "must authenticate its peers (viper secret --out FILE makes a secret; "
                    + ViperConfig.AUTH_REQUIRED.name()
                    + "=false serves everyone who can connect)");
        }
        return new Authenticator(protocol, Secret.fromConfig(config));
    }

    /** An authenticator with {@code secret}, or one that lets everyone in without. */
    public static Authenticator of(String protocol, Optional<Secret> secret) {
        return new Authenticator(protocol, secret);
    }

    /** Whether peers must prove they hold a key. */
    public boolean required() {
        return secret.isPresent();
    }

    /** The protocol name the proofs are bound to. */
    public String protocol() {
        return protocol;
    }

    /** Starts the handshake of a new connection. */
    public Exchange exchange() {
        return new Exchange();
    }

    /** The handshake of one connection: {@link #challenge()}, then {@link #verify}, then the verdict it returns. */
    public final class Exchange {
        private final byte[] serverNonce = new byte[Handshake.NONCE_BYTES];
        private Role role;
        private byte[] clientNonce;

        private Exchange() {
            RANDOM.nextBytes(serverNonce);
        }

        /** The CHALLENGE frame body, the first bytes the server sends. */
        public byte[] challenge() {
            return Handshake.challenge(required(), serverNonce);
        }

        /**
         * Checks the client's PROOF frame body and returns the role it proved: without a secret, every peer is let in
         * with every right ({@link Role#PRODUCER}).
         *
         * @throws Handshake.Refused naming {@code peer} and the reason; send {@link #refusal} and close
         */
        public Role verify(byte[] proof, String peer) throws Handshake.Refused {
            ByteBuffer b = Handshake.open(proof, "handshake proof", 5 + 2 * Handshake.NONCE_BYTES, peer);
            int code = b.get() & 0xff;
            clientNonce = Handshake.read(b, Handshake.NONCE_BYTES, "proof", peer);
            byte[] mac = Handshake.read(b, Handshake.NONCE_BYTES, "proof", peer);
            if (secret.isEmpty()) {
                role = Role.PRODUCER;
                return role;
            }
            Role claimed = Role.ofCode(code);
            if (claimed == null) {
                throw new Handshake.Refused(
                        peer + " sent no credentials; this " + protocol + " server requires them", true);
            }
            Optional<byte[]> key = secret.get().key(claimed);
            if (key.isEmpty()
                    || !Handshake.same(
                            mac, Handshake.mac(key.get(), "client", protocol, code, serverNonce, clientNonce))) {
                throw new Handshake.Refused(
                        peer + ": wrong credentials for the " + claimed.name().toLowerCase(Locale.ROOT) + " role",
                        true);
            }
            role = claimed;
            return role;
        }

        /** The VERDICT frame body accepting the peer {@link #verify} let in, with this server's own proof. */
        public byte[] accepted() {
            if (role == null) {
                throw new IllegalStateException("verify first");
            }
            byte[] mac = secret.isEmpty()
                    ? NO_MAC
                    : Handshake.mac(
                            secret.get().key(role).orElseThrow(),
                            "server",
                            protocol,
                            role.code(),
                            serverNonce,
                            clientNonce);
            return Handshake.verdict(Handshake.ACCEPTED, mac, "");
        }

        /** The VERDICT frame body refusing the peer, saying why. */
        public byte[] refusal(String reason) {
            return Handshake.verdict(Handshake.REFUSED, NO_MAC, reason);
        }
    }
}
