package io.viper.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.viper.ViperConfig;
import java.io.ByteArrayOutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link FrameGuard} on an {@link EmbeddedChannel} with {@code viper.limits.idle.ms} at its minimum (100 ms): whole
 * frames pass unchanged whatever the pauses between them; a frame left half-sent, or trickled byte by byte, closes the
 * connection.
 */
class FrameGuardTest {
    private static final long IDLE_MS = 100;

    private final EmbeddedChannel ch = new EmbeddedChannel(new FrameGuard(ServerSecurity.forServer(
            ViperConfig.of(Map.of("viper.limits.idle.ms", Long.toString(IDLE_MS))),
            "tcp",
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))));

    @AfterEach
    void releaseAll() {
        ch.finishAndReleaseAll();
    }

    private static ByteBuf frame(int length, int bodyBytes) {
        ByteBuf b = Unpooled.buffer(4 + bodyBytes).writeInt(length);
        for (int i = 0; i < bodyBytes; i++) {
            b.writeByte(i);
        }
        return b;
    }

    /** Lets {@code ms} pass, for the guard's clock (real time) and for its periodic check (the channel's). */
    private void pass(long ms) throws InterruptedException {
        Thread.sleep(ms);
        ch.advanceTimeBy(ms, TimeUnit.MILLISECONDS);
        ch.runScheduledPendingTasks();
    }

    /** Every byte that went through the guard so far. */
    private byte[] passedOn() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (ByteBuf b = ch.readInbound(); b != null; b = ch.readInbound()) {
            out.writeBytes(ByteBufUtil.getBytes(b));
            b.release();
        }
        return out.toByteArray();
    }

    @Test
    void wholeFramesPassUnchangedAndPausesBetweenThemAreAllowed() throws Exception {
        ByteBuf two = Unpooled.wrappedBuffer(frame(3, 3), frame(0, 0));
        byte[] expected = ByteBufUtil.getBytes(two);
        ch.writeInbound(two);
        pass(2 * IDLE_MS);
        assertTrue(ch.isOpen(), "between frames, silence is not the guard's business");
        assertArrayEquals(expected, passedOn());
    }

    @Test
    void aLengthPrefixAndBodySplitAcrossReadsAreFollowed() throws Exception {
        ByteBuf whole = frame(5, 5);
        byte[] expected = ByteBufUtil.getBytes(whole);
        ch.writeInbound(whole.retainedSlice(0, 2));
        ch.writeInbound(whole.retainedSlice(2, 4));
        ch.writeInbound(whole.retainedSlice(6, 3));
        whole.release();
        pass(2 * IDLE_MS);
        assertTrue(ch.isOpen(), "the frame completed");
        assertArrayEquals(expected, passedOn());
    }

    @Test
    void aFrameLeftHalfSentClosesTheConnection() throws Exception {
        ch.writeInbound(frame(10, 3));
        pass(IDLE_MS / 2);
        assertTrue(ch.isOpen(), "not yet");
        pass(IDLE_MS);
        assertFalse(ch.isOpen(), "a frame half-sent for more than viper.limits.idle.ms");
        passedOn();
    }

    @Test
    void aFrameTrickledByteByByteClosesTheConnectionThoughBytesKeepComing() throws Exception {
        ch.writeInbound(frame(100, 0));
        for (int i = 0; i < 8 && ch.isOpen(); i++) {
            pass(IDLE_MS / 3);
            if (ch.isOpen()) {
                ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {1}));
            }
        }
        assertFalse(ch.isOpen(), "the frame never completed");
        passedOn();
    }
}
