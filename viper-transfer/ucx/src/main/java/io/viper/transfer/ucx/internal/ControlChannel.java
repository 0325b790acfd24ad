package io.viper.transfer.ucx.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * Consumer end of one control connection: a non-blocking socket channel and its own selector, so
 * that every wait has a deadline and a wait for RDMA completion also notices when the producer's end
 * closes. Used by one thread at a time; {@link #wakeup()} may be called from any thread.
 */
final class ControlChannel implements AutoCloseable {
    private final String peer;
    private final SocketChannel channel;
    private final Selector selector;
    private final SelectionKey key;
    private final ByteBuffer in = ByteBuffer.allocate(4 + ControlProtocol.MAX_FRAME);

    record Frame(byte type, ByteBuffer payload) {
    }

    private ControlChannel(String peer, SocketChannel channel, Selector selector, SelectionKey key) {
        this.peer = peer;
        this.channel = channel;
        this.selector = selector;
        this.key = key;
    }

    /** Connects to {@code address} within {@code connectTimeoutMs} (and before {@code deadline}), and sends the magic. */
    static ControlChannel connect(String peer, InetSocketAddress address, long connectTimeoutMs, long deadline) {
        InetSocketAddress resolved = new InetSocketAddress(address.getHostString(), address.getPort());
        if (resolved.isUnresolved()) {
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, peer + ": unknown host " + address.getHostString());
        }
        long connectDeadline = Math.min(deadline, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(connectTimeoutMs));
        SocketChannel ch = null;
        Selector sel = null;
        try {
            ch = SocketChannel.open();
            ch.configureBlocking(false);
            ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
            sel = Selector.open();
            SelectionKey k = ch.register(sel, 0);
            ControlChannel c = new ControlChannel(peer, ch, sel, k);
            if (!ch.connect(resolved)) {
                k.interestOps(SelectionKey.OP_CONNECT);
                while (!ch.finishConnect()) {
                    c.select(connectDeadline, "connecting");
                }
            }
            k.interestOps(0);
            c.send(ByteBuffer.allocate(4).putInt(ControlProtocol.MAGIC).flip(), deadline);
            return c;
        } catch (IOException e) {
            closeQuietly(ch, sel);
            throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, peer + ": cannot connect: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeQuietly(ch, sel);
            throw e;
        }
    }

    /** Writes all of {@code frame} before {@code deadline}. */
    void send(ByteBuffer frame, long deadline) {
        try {
            while (frame.hasRemaining()) {
                if (channel.write(frame) == 0) {
                    key.interestOps(SelectionKey.OP_WRITE);
                    select(deadline, "sending");
                    key.interestOps(0);
                }
            }
        } catch (IOException e) {
            throw lost(e);
        }
    }

    /** Reads the next frame before {@code deadline}. */
    Frame receive(long deadline) throws ControlProtocol.ProtocolException {
        while (true) {
            Frame f = parse();
            if (f != null) {
                return f;
            }
            key.interestOps(SelectionKey.OP_READ);
            select(deadline, "waiting for the producer");
            key.interestOps(0);
            readSome();
        }
    }

    /**
     * Waits while {@code waiting} holds (call {@link #wakeup()} when it may have changed), failing
     * when the producer closes the connection, sends anything, or {@code deadline} passes.
     */
    void awaitWhile(BooleanSupplier waiting, long deadline) throws ControlProtocol.ProtocolException {
        key.interestOps(SelectionKey.OP_READ);
        try {
            while (waiting.getAsBoolean()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw timeout("waiting for RDMA reads");
                }
                selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                if (!selector.selectedKeys().isEmpty()) {
                    selector.selectedKeys().clear();
                    readSome();
                    if (in.position() > 0) {
                        throw new ControlProtocol.ProtocolException("producer sent data while the transfer was running");
                    }
                }
            }
        } catch (IOException e) {
            throw lost(e);
        } finally {
            if (key.isValid()) {
                key.interestOps(0);
            }
        }
    }

    /**
     * Without blocking: fails if the producer has closed the connection (or sent anything) by now.
     * Checked right before the rkey is unpacked, see {@link UcxClient}.
     */
    void checkOpen() throws ControlProtocol.ProtocolException {
        key.interestOps(SelectionKey.OP_READ);
        try {
            if (selector.selectNow() > 0) {
                selector.selectedKeys().clear();
                readSome();
                if (in.position() > 0) {
                    throw new ControlProtocol.ProtocolException("producer sent data out of turn");
                }
            }
        } catch (IOException e) {
            throw lost(e);
        } finally {
            key.interestOps(0);
        }
    }

    /** Wakes a thread blocked in {@link #awaitWhile}. Any thread. */
    void wakeup() {
        selector.wakeup();
    }

    private void select(long deadline, String what) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw timeout(what);
        }
        try {
            selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            selector.selectedKeys().clear();
        } catch (IOException e) {
            throw lost(e);
        }
    }

    private void readSome() {
        try {
            int n = channel.read(in);
            if (n < 0) {
                throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, peer + ": producer closed the control connection");
            }
        } catch (IOException e) {
            throw lost(e);
        }
    }

    private Frame parse() throws ControlProtocol.ProtocolException {
        if (in.position() < 4) {
            return null;
        }
        int length = ControlProtocol.checkLength(in.getInt(0));
        if (in.position() < 4 + length) {
            return null;
        }
        byte type = in.get(4);
        byte[] payload = new byte[length - 1];
        in.get(5, payload);
        in.flip();
        in.position(4 + length);
        in.compact();
        return new Frame(type, ByteBuffer.wrap(payload));
    }

    private RetriableViperException lost(IOException e) {
        return new RetriableViperException(ViperException.Reason.UNAVAILABLE, peer + ": control connection lost: " + e.getMessage(), e);
    }

    private RetriableViperException timeout(String what) {
        return new ViperTimeoutException(peer + ": timed out " + what);
    }

    @Override
    public void close() {
        closeQuietly(channel, selector);
    }

    private static void closeQuietly(SocketChannel ch, Selector sel) {
        try {
            if (sel != null) {
                sel.close();
            }
        } catch (IOException ignored) {
            // closing anyway
        }
        try {
            if (ch != null) {
                ch.close();
            }
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
