package io.viper.transfer.gpu.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The control channel of the GPU transports: length-prefixed frames (a 4-byte big-endian length,
 * then a {@link DataOutputStream}-encoded body) on a blocking {@link SocketChannel}, followed for
 * {@code cuda-pipe} by raw payload bytes. Frames are at most {@value #MAX_FRAME} bytes. Stateless.
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

    private Wire() {
    }

    /** A body writer. */
    @FunctionalInterface
    public interface Body {
        void write(DataOutputStream out) throws IOException;
    }

    /** Connects to {@code host:port} of {@code uri}. */
    public static SocketChannel connect(URI uri, int timeoutMs) {
        if (uri.getHost() == null || uri.getPort() < 1) {
            throw new ViperConfigException("location " + uri + " has no host:port");
        }
        try {
            SocketChannel ch = SocketChannel.open();
            ch.socket().connect(new InetSocketAddress(uri.getHost(), uri.getPort()), timeoutMs);
            ch.socket().setTcpNoDelay(true);
            ch.socket().setSoTimeout(timeoutMs);
            return ch;
        } catch (IOException e) {
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, "cannot reach " + uri + ": " + e.getMessage(), e);
        }
    }

    /** Writes one frame. */
    public static void send(SocketChannel ch, Body body) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            body.write(out);
        }
        ByteBuffer b = ByteBuffer.allocate(4 + bytes.size());
        b.putInt(bytes.size()).put(bytes.toByteArray()).flip();
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    /** Reads one frame; throws {@link java.io.EOFException} when the peer closed before it. */
    public static DataInputStream receive(SocketChannel ch) throws IOException {
        ByteBuffer len = ByteBuffer.allocate(4);
        fill(ch, len);
        int n = len.flip().getInt();
        if (n < 0 || n > MAX_FRAME) {
            throw new IOException("control frame of " + n + " bytes (at most " + MAX_FRAME + ")");
        }
        ByteBuffer body = ByteBuffer.allocate(n);
        fill(ch, body);
        return new DataInputStream(new ByteArrayInputStream(body.array()));
    }

    /** Reads until {@code b} is full. */
    public static void fill(SocketChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) {
                throw new java.io.EOFException("connection closed by the peer");
            }
        }
    }

    /** Writes all of native segment {@code s} (in pieces of at most 1 GiB). */
    public static void write(SocketChannel ch, MemorySegment s) throws IOException {
        for (long off = 0; off < s.byteSize(); off += 1L << 30) {
            ByteBuffer b = s.asSlice(off, Math.min(1L << 30, s.byteSize() - off)).asByteBuffer();
            while (b.hasRemaining()) {
                ch.write(b);
            }
        }
    }

    /** Fills all of native segment {@code s} from the channel. */
    public static void read(SocketChannel ch, MemorySegment s) throws IOException {
        for (long off = 0; off < s.byteSize(); off += 1L << 30) {
            fill(ch, s.asSlice(off, Math.min(1L << 30, s.byteSize() - off)).asByteBuffer());
        }
    }
}
