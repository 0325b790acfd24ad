package io.viper.net;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;

/**
 * TLS over a non-blocking {@link SocketChannel}, for {@link FrameChannel}: reads and writes return at once like the
 * channel's own, and say what to wait for when they cannot go on. Decrypted bytes pass through a buffer of one TLS
 * record; encrypted ones through one of one packet. Used by one thread at a time, as its {@link FrameChannel}.
 */
final class TlsSession {
    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);

    private final SSLEngine engine;
    private final SocketChannel channel;
    /** Encrypted bytes received and not yet unwrapped; in write mode. */
    private ByteBuffer netIn;
    /** Encrypted bytes wrapped and not yet sent; in read mode. */
    private final ByteBuffer netOut;
    /** Decrypted bytes not yet handed out; in read mode. */
    private ByteBuffer appIn;

    TlsSession(SSLEngine engine, SocketChannel channel) throws SSLException {
        this.engine = engine;
        engine.beginHandshake();
        this.channel = channel;
        int packet = engine.getSession().getPacketBufferSize();
        this.netIn = ByteBuffer.allocate(packet);
        this.netOut = ByteBuffer.allocate(packet).flip();
        this.appIn = ByteBuffer.allocate(engine.getSession().getApplicationBufferSize())
                .flip();
    }

    /**
     * Advances the handshake as far as it goes without waiting.
     *
     * @return 0 when it is done, else the {@link SelectionKey} operation to wait for
     */
    int handshake() throws IOException {
        while (true) {
            if (!flush()) {
                return SelectionKey.OP_WRITE;
            }
            switch (engine.getHandshakeStatus()) {
                case NOT_HANDSHAKING, FINISHED -> {
                    return 0;
                }
                case NEED_TASK -> runTasks();
                case NEED_WRAP -> wrap(EMPTY);
                case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> {
                    SSLEngineResult.Status status = unwrap();
                    if (status == SSLEngineResult.Status.CLOSED) {
                        throw new EOFException("the peer closed the TLS session during its handshake");
                    }
                    if (status == SSLEngineResult.Status.BUFFER_UNDERFLOW) {
                        int n = channel.read(netIn);
                        if (n < 0) {
                            throw new EOFException("the peer closed the connection during the TLS handshake");
                        }
                        if (n == 0) {
                            return SelectionKey.OP_READ;
                        }
                    }
                }
            }
        }
    }

    /** Like {@link SocketChannel#read}: decrypted bytes into {@code dst}, 0 when none arrived yet, -1 at the end. */
    int read(ByteBuffer dst) throws IOException {
        while (!appIn.hasRemaining()) {
            SSLEngineResult.Status status = unwrap();
            if (status == SSLEngineResult.Status.CLOSED) {
                return -1;
            }
            if (status == SSLEngineResult.Status.BUFFER_UNDERFLOW) {
                int n = channel.read(netIn);
                if (n < 0) {
                    return -1;
                }
                if (n == 0) {
                    return 0;
                }
            }
        }
        int n = Math.min(dst.remaining(), appIn.remaining());
        dst.put(dst.position(), appIn, appIn.position(), n);
        dst.position(dst.position() + n);
        appIn.position(appIn.position() + n);
        return n;
    }

    /** Like {@link SocketChannel#write}: the bytes of {@code src} taken, 0 while earlier records wait to be sent. */
    int write(ByteBuffer src) throws IOException {
        if (!flush()) {
            return 0;
        }
        int before = src.remaining();
        wrap(src);
        flush();
        return before - src.remaining();
    }

    /** Sends wrapped bytes waiting; whether none is left. */
    boolean flush() throws IOException {
        while (netOut.hasRemaining()) {
            if (channel.write(netOut) == 0) {
                return false;
            }
        }
        return true;
    }

    private void wrap(ByteBuffer src) throws IOException {
        netOut.clear();
        SSLEngineResult r;
        try {
            r = engine.wrap(src, netOut);
        } finally {
            netOut.flip();
        }
        if (r.getStatus() == SSLEngineResult.Status.CLOSED) {
            throw new EOFException("the TLS session is closed");
        }
        if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_TASK) {
            runTasks();
        }
    }

    /**
     * Unwraps one record from {@code netIn} into {@code appIn} (which must be drained); answers what the session needs
     * on the way.
     */
    private SSLEngineResult.Status unwrap() throws IOException {
        appIn.compact();
        netIn.flip();
        SSLEngineResult r;
        try {
            r = engine.unwrap(netIn, appIn);
        } catch (SSLException e) {
            throw new SSLException("TLS: " + e.getMessage(), e);
        } finally {
            netIn.compact();
            appIn.flip();
        }
        switch (r.getStatus()) {
            case BUFFER_OVERFLOW -> appIn = grow(appIn, engine.getSession().getApplicationBufferSize(), true);
            case BUFFER_UNDERFLOW -> {
                if (netIn.remaining() == 0) {
                    netIn = grow(netIn, engine.getSession().getPacketBufferSize(), false);
                }
            }
            default -> {}
        }
        switch (r.getHandshakeStatus()) {
            case NEED_TASK -> runTasks();
            case NEED_WRAP -> {
                // A post-handshake message to answer (a key update): sent with the next write or flush.
                if (flush()) {
                    wrap(EMPTY);
                    flush();
                }
            }
            default -> {}
        }
        return r.getStatus() == SSLEngineResult.Status.OK && !appIn.hasRemaining() && r.bytesConsumed() == 0
                ? SSLEngineResult.Status.BUFFER_UNDERFLOW
                : r.getStatus();
    }

    private static ByteBuffer grow(ByteBuffer b, int atLeast, boolean readMode) {
        ByteBuffer bigger = ByteBuffer.allocate(Math.max(atLeast, b.capacity() * 2));
        if (readMode) {
            bigger.put(b).flip();
        } else {
            b.flip();
            bigger.put(b);
        }
        return bigger;
    }

    private void runTasks() {
        for (Runnable task; (task = engine.getDelegatedTask()) != null; ) {
            task.run();
        }
    }
}
