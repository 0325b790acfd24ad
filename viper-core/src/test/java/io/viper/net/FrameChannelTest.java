package io.viper.net;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Both ends of a loopback connection, one a {@link FrameChannel} and the other a plain blocking socket playing the
 * peer.
 */
class FrameChannelTest {
    private static final FrameChannel.Limits LIMITS = new FrameChannel.Limits(1, 64, Duration.ofMillis(300));

    private ServerSocketChannel listener;
    private FrameChannel channel;
    private SocketChannel peer;

    @BeforeEach
    void connect() throws IOException {
        listener = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        channel = FrameChannel.connect((InetSocketAddress) listener.getLocalAddress(), deadlineIn(10_000), LIMITS);
        peer = listener.accept();
    }

    @AfterEach
    void close() throws IOException {
        channel.close();
        peer.close();
        listener.close();
    }

    private static long deadlineIn(long ms) {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
    }

    private void peerWrites(byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) {
            peer.write(b);
        }
    }

    private static byte[] frame(String body) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        return ByteBuffer.allocate(4 + b.length).putInt(b.length).put(b).array();
    }

    @Test
    void framesAndTheRawBytesAfterThemArriveWhereAsked() throws IOException {
        channel.writeFrame(ByteBuffer.wrap("LEASE".getBytes(StandardCharsets.UTF_8)), deadlineIn(10_000));
        ByteBuffer request = ByteBuffer.allocate(9);
        while (request.hasRemaining()) {
            peer.read(request);
        }
        assertArrayEquals(frame("LEASE"), request.array());

        byte[] raw = new byte[1000];
        for (int i = 0; i < raw.length; i++) {
            raw[i] = (byte) i;
        }
        ByteBuffer reply =
                ByteBuffer.allocate(9 + raw.length).put(frame("GRANT")).put(raw).flip();
        while (reply.hasRemaining()) {
            peer.write(reply);
        }
        ByteBuffer body = channel.readFrame(FrameChannel.NO_DEADLINE);
        assertEquals("GRANT", StandardCharsets.UTF_8.decode(body).toString());
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dst = arena.allocate(raw.length);
            channel.readFully(dst.asByteBuffer(), FrameChannel.NO_DEADLINE);
            assertArrayEquals(
                    raw, dst.toArray(ValueLayout.JAVA_BYTE), "no byte of the raw part was read ahead with the frame");
        }
    }

    @Test
    void framesOutsideTheLimitsAreRefusedBeforeTheirBody() throws IOException {
        peerWrites(ByteBuffer.allocate(4).putInt(65).array());
        assertEquals(
                "frame length 65 outside 1..64",
                assertThrows(ProtocolException.class, () -> channel.readFrame(FrameChannel.NO_DEADLINE))
                        .getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> channel.writeFrame(ByteBuffer.allocate(0), FrameChannel.NO_DEADLINE));
    }

    @Test
    void aPeerThatStallsOrMissesTheDeadlineFailsTheRead() throws IOException {
        peerWrites(new byte[] {0, 0, 0, 8, 1, 2}); // six of the twelve bytes of a frame, then nothing
        SocketTimeoutException stall =
                assertThrows(SocketTimeoutException.class, () -> channel.readFrame(FrameChannel.NO_DEADLINE));
        assertEquals("no progress for 300 ms while receiving", stall.getMessage());
        SocketTimeoutException late = assertThrows(
                SocketTimeoutException.class, () -> channel.readFully(ByteBuffer.allocate(1), System.nanoTime()));
        assertEquals("deadline passed while receiving", late.getMessage());
    }

    @Test
    void aPeerThatClosesEndsTheRead() throws IOException {
        peerWrites(new byte[] {0, 0});
        peer.close();
        assertThrows(EOFException.class, () -> channel.readFrame(FrameChannel.NO_DEADLINE));
    }

    @Test
    void quietMeansNeitherDataNorClose() throws IOException {
        channel.requireQuiet();
        peerWrites(new byte[] {7});
        assertTrue(waitFor(() -> assertThrows(ProtocolException.class, channel::requireQuiet)));
    }

    @Test
    void quietFailsOnceThePeerClosed() throws IOException {
        peer.close();
        assertTrue(waitFor(() -> assertThrows(EOFException.class, channel::requireQuiet)));
    }

    /** Retries {@code check} (the peer's bytes take a moment to arrive) until it passes; false if it never does. */
    private static boolean waitFor(Runnable check) {
        AssertionError last = null;
        for (int i = 0; i < 500; i++) {
            try {
                check.run();
                return true;
            } catch (AssertionError e) {
                last = e;
                try {
                    Thread.sleep(10);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new AssertionError(ie);
                }
            }
        }
        throw last;
    }

    @Test
    void awaitWhileReturnsWhenWokenAfterTheWorkIsDone() throws Exception {
        AtomicBoolean busy = new AtomicBoolean(true);
        CompletableFuture<Void> worker = CompletableFuture.runAsync(
                () -> {
                    busy.set(false);
                    channel.wakeup();
                },
                CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS));
        channel.awaitWhile(busy::get, deadlineIn(30_000));
        assertFalse(busy.get());
        worker.join();
    }

    @Test
    void awaitWhileFailsWhenThePeerSpeaksClosesOrTheDeadlinePasses() throws IOException {
        assertEquals(
                "deadline passed while waiting",
                assertThrows(SocketTimeoutException.class, () -> channel.awaitWhile(() -> true, deadlineIn(50)))
                        .getMessage());
        peerWrites(new byte[] {1});
        assertThrows(ProtocolException.class, () -> channel.awaitWhile(() -> true, FrameChannel.NO_DEADLINE));
    }

    @Test
    void awaitWhileFailsWhenThePeerCloses() throws IOException {
        peer.close();
        assertThrows(EOFException.class, () -> channel.awaitWhile(() -> true, FrameChannel.NO_DEADLINE));
    }

    @Test
    void closeFromAnotherThreadEndsABlockedRead() {
        CompletableFuture.runAsync(channel::close, CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS));
        assertThrows(AsynchronousCloseException.class, () -> channel.readFrame(FrameChannel.NO_DEADLINE));
        assertFalse(channel.isOpen());
    }

    @Test
    void connectingWhereNobodyListensFails() throws IOException {
        InetSocketAddress free;
        try (ServerSocketChannel s =
                ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            free = (InetSocketAddress) s.getLocalAddress();
        }
        assertThrows(ConnectException.class, () -> FrameChannel.connect(free, deadlineIn(10_000), LIMITS));
    }

    @Test
    void acceptedChannelsCarryFramesToo() throws IOException {
        try (FrameChannel server = FrameChannel.of(peer, new FrameChannel.Limits(0, 16, Duration.ZERO))) {
            channel.writeFrame(ByteBuffer.wrap(new byte[] {42}), deadlineIn(10_000));
            assertEquals(42, server.readFrame(FrameChannel.NO_DEADLINE).get());
            server.writeFrame(ByteBuffer.allocate(0), FrameChannel.NO_DEADLINE);
            assertThrows(
                    ProtocolException.class,
                    () -> channel.readFrame(deadlineIn(10_000)),
                    "an empty frame is below this side's minimum");
        }
    }
}
