package io.viper.transfer.tcp.internal;

import io.viper.auth.ClientAuth;
import io.viper.auth.FrameAuth;
import io.viper.auth.Handshake;
import io.viper.net.FrameChannel;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;

/**
 * One client connection to a producer: a {@link FrameChannel} whose every wait is bounded by the progress timeout while
 * reads still land directly in the caller's memory, plus the checks of the {@code tcp://} response header. Used by one
 * thread at a time (borrowed from the pool); {@link #close()} may be called from any thread and wakes a thread blocked
 * in it.
 */
final class ClientConnection implements AutoCloseable {
    private final InetSocketAddress address;
    private final FrameChannel channel;

    private ClientConnection(InetSocketAddress address, FrameChannel channel) {
        this.address = address;
        this.channel = channel;
    }

    /**
     * Connects to {@code address} (over TLS with {@code tls}, when not null) and runs the authentication handshake with
     * {@code auth}, waiting at most {@code timeoutMs} in all; later waits fail after {@code timeoutMs} without
     * progress.
     *
     * @throws Handshake.Refused when the producer refused this client or could not prove its own key
     */
    static ClientConnection connect(InetSocketAddress address, long timeoutMs, ClientAuth auth, SSLContext tls)
            throws IOException, Handshake.Refused {
        FrameChannel.Limits limits = new FrameChannel.Limits(
                TcpProtocol.HEADER_BYTES, TcpProtocol.MAX_RESPONSE_FRAME, Duration.ofMillis(timeoutMs));
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        FrameChannel channel = FrameChannel.connect(address, deadline, limits, tls);
        try {
            FrameAuth.connect(
                    channel,
                    auth.attempt("tcp", "tcp://" + address.getHostString() + ":" + address.getPort()),
                    deadline);
            return new ClientConnection(address, channel);
        } catch (IOException | Handshake.Refused | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    InetSocketAddress address() {
        return address;
    }

    /**
     * Whether this idle connection can be reused: the peer has not closed it and sent nothing unexpected. Reads at most
     * one byte, without waiting.
     */
    boolean isReusable() {
        try {
            channel.requireQuiet();
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Writes all of {@code buffers}. */
    void write(ByteBuffer... buffers) throws IOException {
        channel.write(FrameChannel.NO_DEADLINE, buffers);
    }

    /** Reads until {@code dst} is full; EOF or no progress for the timeout is an error. */
    void readFully(ByteBuffer dst) throws IOException {
        channel.readFully(dst, FrameChannel.NO_DEADLINE);
    }

    /** Reads one response frame and checks its version; returns the type followed by the payload, ready to read. */
    ByteBuffer readFrame() throws IOException {
        ByteBuffer frame = channel.readFrame(FrameChannel.NO_DEADLINE);
        byte version = frame.get();
        if (version != TcpProtocol.VERSION) {
            throw new ProtocolViolation(
                    "response with protocol version " + (version & 0xff) + ", expected " + TcpProtocol.VERSION);
        }
        return frame.slice();
    }

    boolean isClosed() {
        return !channel.isOpen();
    }

    @Override
    public void close() {
        channel.close();
    }

    /** The server sent something this client does not understand. */
    static final class ProtocolViolation extends IOException {
        private static final long serialVersionUID = 1L;

        ProtocolViolation(String message) {
            super(message);
        }
    }
}
