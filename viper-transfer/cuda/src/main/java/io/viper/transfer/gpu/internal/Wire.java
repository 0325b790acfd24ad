package io.viper.transfer.gpu.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.net.HostPort;
import io.viper.net.FrameChannel;
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
 * The control channel of the GPU transports: length-prefixed frames (a 4-byte big-endian length,
 * then a {@link DataOutputStream}-encoded body) on a {@link FrameChannel}, followed for
 * {@code cuda-pipe} by raw payload bytes. Frames are at most {@value #MAX_FRAME} bytes. A consumer's
 * wait fails after its timeout without progress; the server waits for requests as long as the
 * connection lives (a lease may be held across a long device copy). Stateless.
 */
public final class Wire {
    /** Largest control frame accepted. */
    public static final int MAX_FRAME = 1 << 20;
    /** Status: request granted. */
    public static final byte OK = 0;
    /** Status: version unknown or recycled. */
    public static final byte GONE = 1;
    /** Status: the producer failed; a message follows. */
    public static final byte FAILED = 2;
    /** The server's side of a connection: frames of any size up to the limit, no timeout. */
    static final FrameChannel.Limits SERVER = new FrameChannel.Limits(0, MAX_FRAME, Duration.ZERO);

    private Wire() {
    }

    /** A body writer. */
    @FunctionalInterface
    public interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    /** Connects to {@code host:port} of {@code uri}, a location of {@code scheme}; every later wait fails after {@code timeoutMs} without progress. */
    public static FrameChannel connect(URI uri, String scheme, int timeoutMs) {
        HostPort hostPort = HostPort.parse(uri, scheme, false);
        FrameChannel.Limits limits = new FrameChannel.Limits(0, MAX_FRAME, Duration.ofMillis(timeoutMs));
        try {
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            // Resolved here, not by HostPort: a host that does not resolve is an unreachable peer, not bad configuration.
            return FrameChannel.connect(new InetSocketAddress(hostPort.host(), hostPort.port()), deadline, limits);
        } catch (IOException | UnresolvedAddressException e) {
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, "cannot reach " + uri + ": "
                    + (e.getMessage() == null ? "unknown host " + uri.getHost() : e.getMessage()), e);
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
        ByteBuffer body = ch.readFrame(FrameChannel.NO_DEADLINE);
        return new DataInputStream(new ByteArrayInputStream(body.array(), body.arrayOffset() + body.position(), body.remaining()));
    }

    /** Writes all of native segment {@code s} (in pieces of at most 1 GiB). */
    public static void write(FrameChannel ch, MemorySegment s) throws IOException {
        for (long off = 0; off < s.byteSize(); off += 1L << 30) {
            ch.write(FrameChannel.NO_DEADLINE, s.asSlice(off, Math.min(1L << 30, s.byteSize() - off)).asByteBuffer());
        }
    }

    /** Fills all of native segment {@code s} from the channel. */
    public static void read(FrameChannel ch, MemorySegment s) throws IOException {
        for (long off = 0; off < s.byteSize(); off += 1L << 30) {
            ch.readFully(s.asSlice(off, Math.min(1L << 30, s.byteSize() - off)).asByteBuffer(), FrameChannel.NO_DEADLINE);
        }
    }
}
