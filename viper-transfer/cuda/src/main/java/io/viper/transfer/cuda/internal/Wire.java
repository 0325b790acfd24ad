package io.viper.transfer.cuda.internal;

import io.viper.auth.ClientAuth;
import io.viper.auth.FrameAuth;
import io.viper.auth.Handshake;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.net.FrameChannel;
import io.viper.net.HostPort;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.UnresolvedAddressException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The control channel of the GPU transports: the authentication handshake, the 4-byte {@link #MAGIC} (the protocol's
 * name and version, checked by the server), then length-prefixed frames (a 4-byte big-endian length, then a
 * {@link DataOutputStream}-encoded body) on a {@link FrameChannel}, followed for {@code cuda-pipe} by raw payload
 * bytes. Frames are at most {@value #MAX_FRAME} bytes. A consumer's wait fails after its timeout without progress; the
 * server waits for each request up to {@code viper.limits.idle.ms}. Stateless.
 */
public final class Wire {
    /** Largest control frame accepted. */
    public static final int MAX_FRAME = 1 << 20;
    /** "VCU1": Viper CUDA control, protocol 1; the consumer's first bytes after the handshake. */
    public static final int MAGIC = 0x56435531;
    /** Status: request granted. */
    public static final byte OK = 0;
    /** Status: version unknown or recycled. */
    public static final byte GONE = 1;
    /** Status: the producer failed; a message follows. */
    public static final byte FAILED = 2;

    private Wire() {}

    /** A body writer. */
    @FunctionalInterface
    public interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    /**
     * Connects to {@code host:port} of {@code uri}, a location of {@code scheme}, runs the authentication handshake
     * with {@code auth} and sends the magic; every later wait fails after {@code timeoutMs} without progress.
     *
     * @throws ViperConfigException when the producer refused this consumer's credentials or could not prove its own
     */
    public static FrameChannel connect(URI uri, String scheme, int timeoutMs, ClientAuth auth) {
        HostPort hostPort = HostPort.parse(uri, scheme, false);
        FrameChannel.Limits limits = new FrameChannel.Limits(0, MAX_FRAME, Duration.ofMillis(timeoutMs));
        FrameChannel ch;
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        try {
            // Resolved here, not by HostPort: a host that does not resolve is an unreachable peer, not bad
            // configuration.
            ch = FrameChannel.connect(new InetSocketAddress(hostPort.host(), hostPort.port()), deadline, limits);
        } catch (IOException | UnresolvedAddressException e) {
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE,
                    "cannot reach " + uri + ": "
                            + (e.getMessage() == null ? "unknown host " + uri.getHost() : e.getMessage()),
                    e);
        }
        try {
            FrameAuth.connect(ch, auth.attempt(scheme, uri.toString()), deadline);
            ch.write(deadline, ByteBuffer.allocate(4).putInt(0, MAGIC));
            return ch;
        } catch (Handshake.Refused e) {
            ch.close();
            throw new ViperConfigException(e.getMessage(), e); // the cause tells a refusal of credentials
        } catch (IOException e) {
            ch.close();
            throw new RetriableViperException(
                    ViperException.Reason.UNAVAILABLE, "cannot reach " + uri + ": " + e.getMessage(), e);
        }
    }

    /** Writes one frame. */
    public static void send(FrameChannel ch, Body body) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            body.write(out);
        }
        ch.writeFrame(ByteBuffer.wrap(bytes.toByteArray()), FrameChannel.NO_DEADLINE);
    }

    /** Reads one frame; throws {@link java.io.EOFException} when the peer closed before it. */
    public static DataInputStream receive(FrameChannel ch) throws IOException {
        return receive(ch, FrameChannel.NO_DEADLINE);
    }

    /**
     * As {@link #receive(FrameChannel)}, failing with a {@link java.net.SocketTimeoutException} when the whole frame
     * has not arrived by {@code deadline}.
     */
    public static DataInputStream receive(FrameChannel ch, long deadline) throws IOException {
        ByteBuffer body = ch.readFrame(deadline);
        return new DataInputStream(
                new ByteArrayInputStream(body.array(), body.arrayOffset() + body.position(), body.remaining()));
    }

    /** Writes all of native segment {@code s} (in pieces of at most 1 GiB). */
    public static void write(FrameChannel ch, MemorySegment s) throws IOException {
        for (long off = 0; off < s.byteSize(); off += 1L << 30) {
            ch.write(
                    FrameChannel.NO_DEADLINE,
                    s.asSlice(off, Math.min(1L << 30, s.byteSize() - off)).asByteBuffer());
        }
    }

    /** Fills all of native segment {@code s} from the channel. */
    public static void read(FrameChannel ch, MemorySegment s) throws IOException {
        for (long off = 0; off < s.byteSize(); off += 1L << 30) {
            ch.readFully(
                    s.asSlice(off, Math.min(1L << 30, s.byteSize() - off)).asByteBuffer(), FrameChannel.NO_DEADLINE);
        }
    }
}
