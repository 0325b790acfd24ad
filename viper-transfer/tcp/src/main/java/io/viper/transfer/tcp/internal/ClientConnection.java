package io.viper.transfer.tcp.internal;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

/**
 * One client connection to a producer: a non-blocking {@link SocketChannel} driven by its own
 * {@link Selector}, so that every wait is bounded by the progress timeout while reads still land
 * directly in the caller's memory. Used by one thread at a time (borrowed from the pool);
 * {@link #close()} may be called from any thread and wakes a thread blocked in it.
 */
final class ClientConnection implements AutoCloseable {
    private final InetSocketAddress address;
    private final SocketChannel channel;
    private final Selector selector;
    private final SelectionKey key;
    private final long timeoutNanos;
    private final ByteBuffer header = ByteBuffer.allocate(TcpProtocol.LENGTH_BYTES + TcpProtocol.HEADER_BYTES);
    private volatile boolean closed;

    private ClientConnection(InetSocketAddress address, SocketChannel channel, Selector selector, SelectionKey key, long timeoutMs) {
        this.address = address;
        this.channel = channel;
        this.selector = selector;
        this.key = key;
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    }

    /** Connects to {@code address}, waiting at most {@code timeoutMs}. */
    static ClientConnection connect(InetSocketAddress address, long timeoutMs) throws IOException {
        SocketChannel ch = SocketChannel.open();
        Selector sel = null;
        try {
            ch.configureBlocking(false);
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ch.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
            sel = Selector.open();
            SelectionKey key = ch.register(sel, SelectionKey.OP_CONNECT);
            if (!ch.connect(address)) {
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
                while (!ch.finishConnect()) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        throw new SocketTimeoutException("connect timed out after " + timeoutMs + " ms");
                    }
                    sel.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                    sel.selectedKeys().clear();
                }
            }
            key.interestOps(SelectionKey.OP_READ);
            return new ClientConnection(address, ch, sel, key, timeoutMs);
        } catch (IOException | RuntimeException e) {
            ch.close();
            if (sel != null) {
                sel.close();
            }
            throw e;
        }
    }

    InetSocketAddress address() {
        return address;
    }

    /**
     * Whether this idle connection can be reused: the peer has not closed it and sent nothing
     * unexpected. Reads at most one byte, without waiting.
     */
    boolean isReusable() {
        if (closed || !channel.isOpen()) {
            return false;
        }
        try {
            ByteBuffer probe = ByteBuffer.allocate(1);
            return channel.read(probe) == 0;
        } catch (IOException e) {
            return false;
        }
    }

    /** Writes all of {@code buffers}. */
    void write(ByteBuffer... buffers) throws IOException {
        long last = System.nanoTime();
        for (ByteBuffer b : buffers) {
            while (b.hasRemaining()) {
                checkOpen();
                if (channel.write(b) > 0) {
                    last = System.nanoTime();
                    continue;
                }
                key.interestOps(SelectionKey.OP_WRITE);
                try {
                    await(last, "sending a request");
                } finally {
                    if (key.isValid()) {
                        key.interestOps(SelectionKey.OP_READ);
                    }
                }
            }
        }
    }

    /** Reads until {@code dst} is full; EOF or no progress for the timeout is an error. */
    void readFully(ByteBuffer dst) throws IOException {
        long last = System.nanoTime();
        while (dst.hasRemaining()) {
            checkOpen();
            int n = channel.read(dst);
            if (n > 0) {
                last = System.nanoTime();
            } else if (n < 0) {
                throw new EOFException("the producer closed the connection");
            } else {
                await(last, "waiting for data");
            }
        }
    }

    /**
     * Reads one response frame and returns its type; the payload (after version and type) is left in
     * the returned buffer, flipped for reading.
     */
    ByteBuffer readFrame() throws IOException {
        header.clear();
        readFully(header);
        header.flip();
        int length = header.getInt();
        byte version = header.get();
        byte type = header.get();
        if (length < TcpProtocol.HEADER_BYTES || length > TcpProtocol.MAX_RESPONSE_FRAME) {
            throw new ProtocolViolation("response frame length " + length + " outside 2.." + TcpProtocol.MAX_RESPONSE_FRAME);
        }
        if (version != TcpProtocol.VERSION) {
            throw new ProtocolViolation("response with protocol version " + (version & 0xff) + ", expected " + TcpProtocol.VERSION);
        }
        ByteBuffer frame = ByteBuffer.allocate(1 + length - TcpProtocol.HEADER_BYTES);
        frame.put(type);
        readFully(frame);
        frame.flip();
        return frame;
    }

    private void await(long lastProgress, String what) throws IOException {
        long left = lastProgress + timeoutNanos - System.nanoTime();
        if (left <= 0) {
            throw new SocketTimeoutException("no progress for " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms while " + what);
        }
        try {
            selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            selector.selectedKeys().clear();
        } catch (ClosedSelectorException e) {
            throw new java.nio.channels.AsynchronousCloseException();
        }
    }

    private void checkOpen() throws IOException {
        if (closed) {
            throw new java.nio.channels.AsynchronousCloseException();
        }
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        closed = true;
        try {
            channel.close();
        } catch (IOException ignored) {
            // Closing is best effort.
        }
        try {
            selector.close();
        } catch (IOException ignored) {
            // Closing is best effort.
        }
    }

    /** The server sent something this client does not understand. */
    static final class ProtocolViolation extends IOException {
        ProtocolViolation(String message) {
            super(message);
        }
    }
}
