package io.viper.net;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import javax.net.ssl.SSLContext;

/**
 * A TCP connection that carries length-prefixed frames (a 4-byte big-endian length, then that many bytes) and raw bytes
 * between them, with every wait bounded. The control channels of the socket transports use it: the {@code tcp://}
 * client, the {@code ucx://} control connection and the GPU transports' control channel; each puts its own header
 * (version, type) inside the frames.
 *
 * <p>Bounds: each call takes a deadline ({@link System#nanoTime()} based, or {@link #NO_DEADLINE}), and
 * {@link Limits#stallTimeout()}, when set, also fails a wait in which no byte moved for that long, which bounds a
 * transfer of any size by the peer's progress rather than by its length. A frame whose length lies outside
 * {@link Limits#minFrame()}..{@link Limits#maxFrame()} is refused before anything is allocated for it.
 *
 * <p>Reads take exactly the bytes asked for, never more, so the raw bytes that follow a frame can be read straight into
 * the caller's memory (a native {@link java.lang.foreign.MemorySegment} viewed as a {@link ByteBuffer}) without an
 * intermediate copy. Buffers stay owned by the caller; a frame returned by {@link #readFrame} is a new heap buffer
 * owned by the caller.
 *
 * <p>Errors are {@link IOException}s the caller turns into its own: {@link SocketTimeoutException} when a bound passes,
 * {@link EOFException} when the peer closed the connection, {@link ProtocolException} for a frame length out of bounds
 * or bytes that arrive when none may, {@link AsynchronousCloseException} after {@link #close()}.
 *
 * <p>TLS, when {@link #connect(InetSocketAddress, long, Limits, SSLContext) connected} with it, sits below the frames:
 * every call works the same, and bytes read into the caller's memory arrive there through one record-sized buffer
 * instead of straight from the socket.
 *
 * <p>Threads: one thread at a time reads and writes (a non-blocking channel driven by its own {@link Selector});
 * {@link #wakeup()} and {@link #close()} may be called from any thread, and close wakes the thread blocked in a call,
 * which then fails.
 */
public final class FrameChannel implements AutoCloseable {
    /** Bytes of the length that starts every frame. */
    public static final int LENGTH_BYTES = 4;
    /** A deadline that never passes. */
    public static final long NO_DEADLINE = Long.MAX_VALUE;

    /**
     * The frames a channel accepts and how long its peer may stall.
     *
     * @param minFrame the shortest frame body accepted, in bytes (0 or more)
     * @param maxFrame the longest frame body accepted, in bytes
     * @param stallTimeout how long a wait may see no byte move before it fails; {@link Duration#ZERO} when only the
     *     deadlines bound the waits
     */
    public record Limits(int minFrame, int maxFrame, Duration stallTimeout) {
        public Limits {
            if (minFrame < 0 || maxFrame < minFrame) {
                throw new IllegalArgumentException("frame limits " + minFrame + ".." + maxFrame);
            }
            Objects.requireNonNull(stallTimeout, "stallTimeout");
            if (stallTimeout.isNegative()) {
                throw new IllegalArgumentException("negative stall timeout " + stallTimeout);
            }
        }
    }

    private final SocketChannel channel;
    /** TLS over {@link #channel}, or null for plain TCP. */
    private TlsSession tls;

    private final Selector selector;
    private final SelectionKey key;
    private final Limits limits;
    private final long stallNanos;
    private final ByteBuffer length = ByteBuffer.allocate(LENGTH_BYTES);
    private volatile boolean closed;

    private FrameChannel(SocketChannel channel, Selector selector, SelectionKey key, Limits limits) {
        this.channel = channel;
        this.selector = selector;
        this.key = key;
        this.limits = limits;
        this.stallNanos = limits.stallTimeout().toNanos();
    }

    /** The two ends of this connection, this side's first, as the kernel's socket tables name them. */
    public InetSocketAddress[] ends() throws IOException {
        return new InetSocketAddress[] {
            (InetSocketAddress) channel.getLocalAddress(), (InetSocketAddress) channel.getRemoteAddress()
        };
    }

    /**
     * Connects to {@code address} (resolved) before {@code deadline}.
     *
     * @throws SocketTimeoutException when the deadline passes first
     * @throws IOException when the connection is refused or fails
     */
    public static FrameChannel connect(InetSocketAddress address, long deadline, Limits limits) throws IOException {
        return connect(address, deadline, limits, null);
    }

    /**
     * As {@link #connect(InetSocketAddress, long, Limits)}, then, with {@code tls} (not null), a TLS handshake before
     * the deadline: the server must present a certificate {@code tls} trusts, for the host {@code address} names
     * ({@link Tls#clientEngine}). Every byte after it is encrypted.
     *
     * @throws javax.net.ssl.SSLException when the handshake fails (an untrusted certificate, another host's)
     */
    public static FrameChannel connect(InetSocketAddress address, long deadline, Limits limits, SSLContext tls)
            throws IOException {
        SocketChannel ch = SocketChannel.open();
        try {
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
            FrameChannel c = open(ch, limits);
            long start = System.nanoTime();
            if (!ch.connect(address)) {
                while (!ch.finishConnect()) {
                    c.await(SelectionKey.OP_CONNECT, deadline, start, "connecting");
                }
            }
            if (tls != null) {
                c.tls = new TlsSession(Tls.clientEngine(tls, address.getHostString(), address.getPort()), ch);
                for (int need; (need = c.tls.handshake()) != 0; ) {
                    c.await(need, deadline, start, "negotiating TLS");
                }
            }
            return c;
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** Takes over {@code connected}, an accepted or connected channel, blocking or not. */
    public static FrameChannel of(SocketChannel connected, Limits limits) throws IOException {
        try {
            connected.setOption(StandardSocketOptions.TCP_NODELAY, true);
            return open(connected, limits);
        } catch (IOException | RuntimeException e) {
            connected.close();
            throw e;
        }
    }

    private static FrameChannel open(SocketChannel ch, Limits limits) throws IOException {
        Objects.requireNonNull(limits, "limits");
        ch.configureBlocking(false);
        Selector sel = Selector.open();
        try {
            return new FrameChannel(ch, sel, ch.register(sel, 0), limits);
        } catch (IOException | RuntimeException e) {
            sel.close();
            throw e;
        }
    }

    /**
     * Writes all of {@code buffers}, in order, before {@code deadline}: gathered into as few system calls (and so TCP
     * segments) as the socket takes, so that pipelined requests arrive together.
     */
    public void write(long deadline, ByteBuffer... buffers) throws IOException {
        long progress = System.nanoTime();
        int first = 0;
        while (true) {
            while (first < buffers.length && !buffers[first].hasRemaining()) {
                first++;
            }
            if (first == buffers.length) {
                break;
            }
            checkOpen();
            long n = tls == null ? channel.write(buffers, first, buffers.length - first) : tls.write(buffers[first]);
            if (n > 0) {
                progress = System.nanoTime();
            } else {
                await(SelectionKey.OP_WRITE, deadline, progress, "sending");
            }
        }
        while (tls != null && !tls.flush()) {
            await(SelectionKey.OP_WRITE, deadline, progress, "sending");
        }
    }

    /** Writes one frame: the length of {@code body}'s remaining bytes, then those bytes. */
    public void writeFrame(ByteBuffer body, long deadline) throws IOException {
        int n = body.remaining();
        if (n < limits.minFrame() || n > limits.maxFrame()) {
            throw new IllegalArgumentException(
                    "frame of " + n + " bytes is outside " + limits.minFrame() + ".." + limits.maxFrame());
        }
        write(deadline, ByteBuffer.allocate(LENGTH_BYTES).putInt(0, n), body);
    }

    /**
     * Reads until {@code dst} is full.
     *
     * @throws EOFException when the peer closes the connection first
     */
    public void readFully(ByteBuffer dst, long deadline) throws IOException {
        long progress = System.nanoTime();
        while (dst.hasRemaining()) {
            checkOpen();
            int n = tls == null ? channel.read(dst) : tls.read(dst);
            if (n > 0) {
                progress = System.nanoTime();
            } else if (n < 0) {
                throw new EOFException("the peer closed the connection");
            } else {
                await(SelectionKey.OP_READ, deadline, progress, "receiving");
            }
        }
    }

    /**
     * Reads one frame and returns its body (the bytes after the length) in a new buffer, ready to read.
     *
     * @throws ProtocolException when the length lies outside the limits
     */
    public ByteBuffer readFrame(long deadline) throws IOException {
        return readFrame(deadline, limits.maxFrame());
    }

    /** As {@link #readFrame(long)}, refusing frames longer than {@code maxFrame} too (a handshake's, say). */
    public ByteBuffer readFrame(long deadline, int maxFrame) throws IOException {
        length.clear();
        readFully(length, deadline);
        int n = length.getInt(0);
        int max = Math.min(maxFrame, limits.maxFrame());
        if (n < limits.minFrame() || n > max) {
            throw new ProtocolException("frame length " + n + " outside " + limits.minFrame() + ".." + max);
        }
        ByteBuffer body = ByteBuffer.allocate(n);
        readFully(body, deadline);
        return body.flip();
    }

    /**
     * Checks, without waiting, that the peer has neither closed the connection nor sent anything: a connection that is
     * idle between requests. A byte that arrived is consumed, so a connection that fails this check is of no further
     * use.
     *
     * @throws EOFException when the peer closed the connection
     * @throws ProtocolException when the peer sent data
     */
    public void requireQuiet() throws IOException {
        checkOpen();
        ByteBuffer probe = ByteBuffer.allocate(1);
        int n = tls == null ? channel.read(probe) : tls.read(probe);
        if (n < 0) {
            throw new EOFException("the peer closed the connection");
        }
        if (n > 0) {
            throw new ProtocolException("the peer sent data out of turn");
        }
    }

    /**
     * Waits while {@code waiting} holds, for work that happens elsewhere (call {@link #wakeup()} when it may have
     * stopped holding); fails as soon as the peer closes the connection or sends anything, since it must be quiet
     * meanwhile. The stall timeout does not apply: only {@code deadline} bounds the wait.
     *
     * @throws SocketTimeoutException when {@code deadline} passes while {@code waiting} still holds
     * @throws EOFException when the peer closed the connection
     * @throws ProtocolException when the peer sent data
     */
    public void awaitWhile(BooleanSupplier waiting, long deadline) throws IOException {
        while (waiting.getAsBoolean()) {
            requireQuiet();
            long millis = 0; // until the peer stirs or wakeup()
            if (deadline != NO_DEADLINE) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new SocketTimeoutException("deadline passed while waiting");
                }
                millis = Math.max(1, TimeUnit.NANOSECONDS.toMillis(left));
            }
            select(SelectionKey.OP_READ, millis);
        }
    }

    /** Wakes the thread blocked in a call of this channel, for example in {@link #awaitWhile}. Any thread. */
    public void wakeup() {
        selector.wakeup();
    }

    /** Whether {@link #close()} has not been called and the connection is still open. */
    public boolean isOpen() {
        return !closed && channel.isOpen();
    }

    /**
     * Closes the connection; a thread blocked in a call fails with {@link AsynchronousCloseException}. Idempotent; any
     * thread.
     */
    @Override
    public void close() {
        closed = true;
        try {
            selector.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        try {
            channel.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Waits for {@code ops} until the deadline or the stall timeout (counted from {@code progress}) passes. */
    private void await(int ops, long deadline, long progress, String what) throws IOException {
        long now = System.nanoTime();
        long left = deadline == NO_DEADLINE ? Long.MAX_VALUE : deadline - now;
        boolean stalled = false;
        if (stallNanos > 0 && progress + stallNanos - now < left) {
            left = progress + stallNanos - now;
            stalled = true;
        }
        if (left <= 0) {
            throw new SocketTimeoutException(
                    stalled
                            ? "no progress for " + TimeUnit.NANOSECONDS.toMillis(stallNanos) + " ms while " + what
                            : "deadline passed while " + what);
        }
        select(ops, left == Long.MAX_VALUE ? 0 : Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
    }

    /** One select for {@code ops}, at most {@code millis} (0: until ready or woken). */
    private void select(int ops, long millis) throws IOException {
        checkOpen();
        try {
            key.interestOps(ops);
            selector.select(millis);
            selector.selectedKeys().clear();
        } catch (ClosedSelectorException | CancelledKeyException e) {
            throw new AsynchronousCloseException();
        } finally {
            if (key.isValid()) {
                key.interestOps(0);
            }
        }
        checkOpen();
    }

    private void checkOpen() throws IOException {
        if (closed) {
            throw new AsynchronousCloseException();
        }
    }
}
