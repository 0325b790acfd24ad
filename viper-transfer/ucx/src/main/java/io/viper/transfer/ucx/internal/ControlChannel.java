package io.viper.transfer.ucx.internal;

import io.viper.auth.ClientAuth;
import io.viper.auth.FrameAuth;
import io.viper.auth.Handshake;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import io.viper.net.FrameChannel;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Consumer end of one control connection: a {@link FrameChannel} whose every wait has a deadline and whose wait for
 * RDMA completion also notices when the producer's end closes, with the failures turned into this transport's errors.
 * Used by one thread at a time; {@link #wakeup()} may be called from any thread.
 */
final class ControlChannel implements AutoCloseable {
    /** Frames of 1 to {@link ControlProtocol#MAX_FRAME} bytes; the deadlines alone bound the waits. */
    private static final FrameChannel.Limits LIMITS =
            new FrameChannel.Limits(1, ControlProtocol.MAX_FRAME, Duration.ZERO);

    private final String peer;
    private final FrameChannel channel;

    record Frame(byte type, ByteBuffer payload) {}

    private ControlChannel(String peer, FrameChannel channel) {
        this.peer = peer;
        this.channel = channel;
    }

    /**
     * Connects to {@code address} within {@code connectTimeoutMs} (and before {@code deadline}), runs the
     * authentication handshake with {@code auth} (with a secret, the producer must prove the same key), and sends the
     * magic.
     *
     * @throws ViperConfigException when the producer refused this consumer's credentials or could not prove its own
     */
    static ControlChannel connect(
            String peer,
            InetSocketAddress address,
            long connectTimeoutMs,
            long deadline,
            ClientAuth.Attempt auth,
            ProducerTrust trust) {
        InetSocketAddress resolved = new InetSocketAddress(address.getHostString(), address.getPort());
        if (resolved.isUnresolved()) {
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE, peer + ": unknown host " + address.getHostString());
        }
        long connectDeadline = Math.min(deadline, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(connectTimeoutMs));
        FrameChannel ch;
        try {
            ch = FrameChannel.connect(resolved, connectDeadline, LIMITS);
        } catch (SocketTimeoutException e) {
            throw timeout(peer, "connecting");
        } catch (IOException e) {
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE, peer + ": cannot connect: " + e.getMessage(), e);
        }
        ControlChannel c = new ControlChannel(peer, ch);
        try {
            trust.checkConnected(ch, peer); // who is at the other end of this very connection, before a byte is read
            FrameAuth.connect(ch, auth, deadline);
            c.send(ByteBuffer.allocate(4).putInt(ControlProtocol.MAGIC).flip(), deadline);
            return c;
        } catch (Handshake.Refused e) {
            c.close();
            throw new ViperConfigException(e.getMessage(), e); // the cause tells a refusal of credentials
        } catch (IOException e) {
            c.close();
            throw c.failure(e, "authenticating");
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /** Writes all of {@code frame} before {@code deadline}. */
    void send(ByteBuffer frame, long deadline) {
        try {
            channel.write(deadline, frame);
        } catch (IOException e) {
            throw failure(e, "sending");
        }
    }

    /** Reads the next frame before {@code deadline}. */
    Frame receive(long deadline) throws ControlProtocol.ProtocolException {
        try {
            ByteBuffer frame = channel.readFrame(deadline);
            return new Frame(frame.get(), frame.slice());
        } catch (ProtocolException e) {
            throw new ControlProtocol.ProtocolException(e.getMessage());
        } catch (IOException e) {
            throw failure(e, "waiting for the producer");
        }
    }

    /** Reads exactly {@code dst.remaining()} raw bytes (the payload after a DATA frame) before {@code deadline}. */
    void readFully(ByteBuffer dst, long deadline) {
        try {
            channel.readFully(dst, deadline);
        } catch (IOException e) {
            throw failure(e, "receiving data");
        }
    }

    /**
     * Waits while {@code waiting} holds (call {@link #wakeup()} when it may have changed), failing when the producer
     * closes the connection, sends anything, or {@code deadline} passes.
     */
    void awaitWhile(BooleanSupplier waiting, long deadline) throws ControlProtocol.ProtocolException {
        try {
            channel.awaitWhile(waiting, deadline);
        } catch (ProtocolException e) {
            throw new ControlProtocol.ProtocolException("producer sent data while the transfer was running");
        } catch (IOException e) {
            throw failure(e, "waiting for RDMA reads");
        }
    }

    /**
     * Without blocking: fails if the producer has closed the connection (or sent anything) by now. Checked right before
     * the rkey is unpacked, see {@link UcxClient}.
     */
    void checkOpen() throws ControlProtocol.ProtocolException {
        try {
            channel.requireQuiet();
        } catch (ProtocolException e) {
            throw new ControlProtocol.ProtocolException("producer sent data out of turn");
        } catch (IOException e) {
            throw failure(e, "checking the connection");
        }
    }

    /** Wakes a thread blocked in {@link #awaitWhile}. Any thread. */
    void wakeup() {
        channel.wakeup();
    }

    private RetriableViperException failure(IOException e, String what) {
        if (e instanceof SocketTimeoutException) {
            return timeout(peer, what);
        }
        if (e instanceof EOFException) {
            return new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE, peer + ": producer closed the control connection");
        }
        return new RetriableViperException(
                ViperException.Reason.UNAVAILABLE, peer + ": control connection lost: " + e.getMessage(), e);
    }

    private static ViperTimeoutException timeout(String peer, String what) {
        return new ViperTimeoutException(peer + ": timed out " + what);
    }

    @Override
    public void close() {
        channel.close();
    }
}
