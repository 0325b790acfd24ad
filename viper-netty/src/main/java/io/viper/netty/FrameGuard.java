package io.viper.netty;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Closes a connection that leaves a frame half-sent for {@code viper.limits.idle.ms}: a peer that trickles one byte now
 * and then never looks idle, but its frame never completes, and the frame decoder behind this handler would hold the
 * bytes so far meanwhile. Follows the 4-byte big-endian length prefix of Viper's frames without copying anything and
 * passes every byte on unchanged. One instance per connection, on its event loop.
 */
final class FrameGuard extends ChannelInboundHandlerAdapter {
    private final ServerSecurity security;
    private final long limitNanos;
    /** Bytes of the length prefix still to come (4..1), or 0 inside a frame's body. */
    private int lengthLeft = 4;

    private int length;
    /** Body bytes still to come in the current frame. */
    private long bodyLeft;
    /** When the current frame's first byte arrived, or 0 between frames. */
    private long frameStarted;

    private ScheduledFuture<?> check;

    FrameGuard(ServerSecurity security) {
        this.security = security;
        this.limitNanos = TimeUnit.MILLISECONDS.toNanos(security.idleMs());
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        long period = Math.max(10, security.idleMs() / 4);
        check = ctx.executor()
                .scheduleAtFixedRate(
                        () -> {
                            if (frameStarted != 0 && System.nanoTime() - frameStarted > limitNanos) {
                                security.refused(
                                        ctx.channel(),
                                        "left a frame half-sent for more than " + security.idleMs() + " ms");
                                ctx.close();
                            }
                        },
                        period,
                        period,
                        TimeUnit.MILLISECONDS);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        check.cancel(false);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        check.cancel(false);
        super.channelInactive(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) throws Exception {
        if (msg instanceof ByteBuf b) {
            follow(b);
        }
        super.channelRead(ctx, msg);
    }

    private void follow(ByteBuf b) {
        int i = b.readerIndex();
        int end = b.writerIndex();
        while (i < end) {
            if (frameStarted == 0) {
                frameStarted = System.nanoTime();
            }
            if (lengthLeft > 0) {
                length = (length << 8) | (b.getByte(i++) & 0xff);
                if (--lengthLeft == 0) {
                    bodyLeft = Integer.toUnsignedLong(length);
                }
            } else {
                long take = Math.min(bodyLeft, end - i);
                i += (int) take;
                bodyLeft -= take;
            }
            if (lengthLeft == 0 && bodyLeft == 0) {
                lengthLeft = 4;
                length = 0;
                frameStarted = 0;
            }
        }
    }
}
