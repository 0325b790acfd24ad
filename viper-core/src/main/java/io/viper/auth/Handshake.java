package io.viper.auth;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * The handshake that opens every connection to a Viper server, whatever it serves (the embedded broker, {@code tcp://},
 * the ucx control channel, the GPU transports' control channel; not the agent's Unix socket, which the file system's
 * permissions guard): three frames, each the body of a length-prefixed frame (a 4-byte big-endian length first), before
 * the protocol's own first byte.
 *
 * <pre>
 * server -&gt; client  CHALLENGE  magic:i32 flags:u8 serverNonce:32
 *                               flags bit 0: the server requires credentials
 * client -&gt; server  PROOF      magic:i32 role:u8 clientNonce:32 mac:32
 *                               role 0 (none, mac all zero), 1 producer, 2 consumer
 * server -&gt; client  VERDICT    magic:i32 status:u8 mac:32 reason:str
 *                               status 0 accepted (mac: the server's proof, zero without credentials),
 *                               1 refused (reason says why; the server closes)
 * </pre>
 *
 * {@code magic} is {@value #MAGIC_TEXT}; {@code str} a 2-byte length and UTF-8. The client's {@code mac} is HMAC-SHA256
 * under the key of the role it claims of {@code "viper-auth-v1 client " + protocol}, the role byte, the server's nonce
 * and its own; the server's {@code mac} the same with {@code server}. Nonces are 32 random bytes from
 * {@link java.security.SecureRandom}, fresh on both sides, so a recorded exchange is worth nothing on another
 * connection, and binding the protocol name keeps a proof made for one port from answering another. A server sends
 * nothing else before the verdict: a peer without the key learns no model name, version or address. Stateless.
 */
public final class Handshake {
    /** "VAU1": Viper authentication, version 1. */
    public static final int MAGIC = 0x56415531;

    static final String MAGIC_TEXT = "VAU1";
    /** Bytes of each nonce and each MAC. */
    public static final int NONCE_BYTES = 32;
    /** Largest handshake frame body; a peer announcing a longer one is refused before anything is allocated. */
    public static final int MAX_FRAME = 1024;

    static final int FLAG_REQUIRED = 1;
    static final int ACCEPTED = 0;
    static final int REFUSED = 1;
    private static final int MAX_REASON_BYTES = 500;

    private Handshake() {}

    /**
     * The handshake failed; the message is one line naming the peer and why. {@link #credentials()} tells a refusal on
     * credentials, which trying again cannot change, from a peer that speaks no Viper handshake (a stranger on the
     * port, which a restarted server may yet take back).
     */
    public static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        private final boolean credentials;

        /** A peer that is no Viper peer of this version, or a malformed or truncated handshake. */
        public Refused(String message) {
            this(message, false);
        }

        /**
         * @param credentials whether the handshake failed on credentials: one side refused the other's proof, required
         *     one the other has none of, or did not prove the same key back
         */
        public Refused(String message, boolean credentials) {
            super(message, null, false, false);
            this.credentials = credentials;
        }

        /**
         * Whether the handshake failed on credentials (see {@link #Refused(String, boolean)}): the same credentials
         * fail again.
         */
        public boolean credentials() {
            return credentials;
        }
    }

    static byte[] challenge(boolean required, byte[] serverNonce) {
        return ByteBuffer.allocate(5 + NONCE_BYTES)
                .putInt(MAGIC)
                .put((byte) (required ? FLAG_REQUIRED : 0))
                .put(serverNonce)
                .array();
    }

    static byte[] proof(int role, byte[] clientNonce, byte[] mac) {
        return ByteBuffer.allocate(5 + 2 * NONCE_BYTES)
                .putInt(MAGIC)
                .put((byte) role)
                .put(clientNonce)
                .put(mac)
                .array();
    }

    static byte[] verdict(int status, byte[] mac, String reason) {
        byte[] r = reason.getBytes(StandardCharsets.UTF_8);
        if (r.length > MAX_REASON_BYTES) {
            r = Arrays.copyOf(r, MAX_REASON_BYTES);
        }
        return ByteBuffer.allocate(5 + NONCE_BYTES + 2 + r.length)
                .putInt(MAGIC)
                .put((byte) status)
                .put(mac)
                .putShort((short) r.length)
                .put(r)
                .array();
    }

    /** A frame body opened past its magic, or a {@link Refused} naming what is wrong with it. */
    static ByteBuffer open(byte[] frame, String what, int minBytes, String peer) throws Refused {
        if (frame.length < minBytes || frame.length > MAX_FRAME) {
            throw new Refused(peer + ": not a Viper " + what + " (" + frame.length + " bytes)");
        }
        ByteBuffer b = ByteBuffer.wrap(frame);
        if (b.getInt() != MAGIC) {
            throw new Refused(peer + ": not a Viper " + what + " (wrong magic): is it a Viper server of this version?");
        }
        return b;
    }

    static byte[] read(ByteBuffer b, int n, String what, String peer) throws Refused {
        try {
            byte[] out = new byte[n];
            b.get(out);
            return out;
        } catch (BufferUnderflowException e) {
            throw new Refused(peer + ": " + what + " truncated");
        }
    }

    /** The MAC {@code side} ("client" or "server") sends for {@code role} on {@code protocol}. */
    static byte[] mac(byte[] key, String side, String protocol, int role, byte[] serverNonce, byte[] clientNonce) {
        byte[] label = ("viper-auth-v1 " + side + " " + protocol).getBytes(StandardCharsets.UTF_8);
        return Secret.hmac(key, label, new byte[] {0, (byte) role}, serverNonce, clientNonce);
    }

    /** Compares MACs in constant time. */
    static boolean same(byte[] a, byte[] b) {
        return MessageDigest.isEqual(a, b);
    }
}
