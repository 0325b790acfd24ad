package io.viper.testing;

import io.viper.ViperConfig;
import io.viper.auth.Authenticator;
import io.viper.auth.ClientAuth;
import io.viper.auth.Handshake;
import io.viper.auth.Role;
import io.viper.auth.Secret;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.util.Optional;

/**
 * A plain blocking socket to a Viper server for tests that speak, or break, its protocol by hand: it can run the
 * authentication handshake first ({@link #handshake}), with or without a secret, then send raw bytes and read raw
 * frames.
 */
public final class RawPeer implements AutoCloseable {
    private final Socket socket;
    public final DataInputStream in;
    public final DataOutputStream out;

    /** Connects to {@code host:port}; reads time out after {@code timeoutMs}. */
    public RawPeer(String host, int port, int timeoutMs) throws IOException {
        socket = new Socket();
        socket.connect(new InetSocketAddress(host, port), 5_000);
        socket.setSoTimeout(timeoutMs);
        in = new DataInputStream(socket.getInputStream());
        out = new DataOutputStream(socket.getOutputStream());
    }

    /**
     * Connects and completes the handshake of {@code protocol} with this user's own secret, as every process of the
     * user does without {@code viper.auth.secret.file} (a server with the defaults lets it in).
     */
    public static RawPeer authenticated(String host, int port, String protocol) throws IOException, Handshake.Refused {
        RawPeer p = new RawPeer(host, port, 10_000);
        p.handshake(protocol, userSecret(), Role.CONSUMER);
        return p;
    }

    /** This user's own secret, what processes with the defaults hold ({@code viper.auth.user.secret}). */
    public static Optional<Secret> userSecret() {
        return Secret.fromConfig(ViperConfig.defaults());
    }

    /** Runs the client's side of the handshake with {@code secret} (or none) acting as {@code role}. */
    public void handshake(String protocol, Optional<Secret> secret, Role role) throws IOException, Handshake.Refused {
        ClientAuth.Attempt attempt = ClientAuth.of(secret, role)
                .attempt(
                        protocol, protocol + "://" + socket.getInetAddress().getHostAddress() + ":" + socket.getPort());
        byte[] proof = attempt.proof(readFrame());
        writeFrame(proof);
        attempt.verdict(readFrame());
    }

    /**
     * The server's side of the handshake with this user's own secret (what a server with the defaults holds) on a raw
     * stream, for fake servers in tests: challenge, read the proof, accept.
     */
    public static void acceptHandshake(DataInputStream in, DataOutputStream out, String protocol)
            throws IOException, Handshake.Refused {
        Authenticator.Exchange ex = Authenticator.of(protocol, userSecret()).exchange();
        byte[] challenge = ex.challenge();
        out.writeInt(challenge.length);
        out.write(challenge);
        out.flush();
        byte[] proof = new byte[in.readInt()];
        in.readFully(proof);
        ex.verify(proof, "test client");
        byte[] verdict = ex.accepted();
        out.writeInt(verdict.length);
        out.write(verdict);
        out.flush();
    }

    /** Writes a length-prefixed frame of {@code body}. */
    public void writeFrame(byte[] body) throws IOException {
        out.writeInt(body.length);
        out.write(body);
        out.flush();
    }

    /** Writes {@code bytes} as they are. */
    public void send(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    /** Reads one length-prefixed frame's body. */
    public byte[] readFrame() throws IOException {
        int n = in.readInt();
        if (n < 0 || n > (64 << 20)) {
            throw new IOException("frame length " + n);
        }
        byte[] f = new byte[n];
        in.readFully(f);
        return f;
    }

    /** Reads until the server closes; true when it did within the read timeout. */
    public boolean closedByPeer() throws IOException {
        byte[] buf = new byte[4096];
        InputStream s = socket.getInputStream();
        try {
            while (s.read(buf) >= 0) {
                // drain
            }
            return true;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (SocketException | EOFException e) {
            return true;
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
