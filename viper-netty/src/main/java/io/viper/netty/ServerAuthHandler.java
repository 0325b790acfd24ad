package io.viper.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.util.AttributeKey;
import io.netty.util.concurrent.ScheduledFuture;
import io.viper.auth.Authenticator;
import io.viper.auth.Handshake;
import io.viper.auth.Role;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The server's side of the {@link Handshake} at the head of a Netty pipeline (after TLS): sends the challenge when the
 * connection opens, reads nothing but the proof, and either answers with its verdict and steps out of the pipeline (the
 * bytes after the proof go on to the protocol's decoder), or refuses and closes. A peer that has not proved itself
 * within {@code viper.limits.handshake.ms}, or announces a proof longer than a handshake frame, is closed. The role it
 * proved is on the channel ({@link #role}). One instance per connection, on its event loop.
 */
final class ServerAuthHandler extends ByteToMessageDecoder {
    private static final AttributeKey<Role> ROLE = AttributeKey.valueOf("viper.auth.role");

    private final ServerSecurity security;
    private final Authenticator.Exchange exchange;
    private ScheduledFuture<?> deadline;
    private boolean done;

    ServerAuthHandler(ServerSecurity security) {
        this.security = security;
        this.exchange = security.authenticator().exchange();
    }

    /** The role the peer of {@code channel} proved; null before the handshake completed. */
    static Role role(Channel channel) {
        return channel.attr(ROLE).get();
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        ctx.writeAndFlush(frame(exchange.challenge())).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        deadline = ctx.executor()
                .schedule(
                        () -> {
                            if (!done) {
                                security.refused(
                                        ctx.channel(),
                                        "did not complete the handshake within " + security.handshakeMs() + " ms");
                                ctx.close();
                            }
                        },
                        security.handshakeMs(),
                        TimeUnit.MILLISECONDS);
        super.channelActive(ctx);
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (done) {
            in.skipBytes(in.readableBytes()); // refused: nothing more is read
            return;
        }
        if (in.readableBytes() < 4) {
            return;
        }
        int n = in.getInt(in.readerIndex());
        if (n < 1 || n > Handshake.MAX_FRAME) {
            refuse(ctx, "sent " + n + " bytes where a handshake proof belongs");
            in.skipBytes(in.readableBytes());
            return;
        }
        if (in.readableBytes() < 4 + n) {
            return;
        }
        in.skipBytes(4);
        byte[] proof = new byte[n];
        in.readBytes(proof);
        String peer = String.valueOf(ctx.channel().remoteAddress());
        Role role;
        try {
            role = exchange.verify(proof, peer);
        } catch (Handshake.Refused e) {
            refuse(ctx, e.getMessage());
            return;
        }
        done = true;
        cancelDeadline();
        ctx.channel().attr(ROLE).set(role);
        PeerLimiter.authenticated(ctx.channel());
        ctx.writeAndFlush(frame(exchange.accepted())).addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
        // The bytes behind the proof, if any, go on to the protocol's decoder when this handler leaves.
        ctx.pipeline().remove(this);
    }

    private void refuse(ChannelHandlerContext ctx, String why) {
        done = true;
        cancelDeadline();
        security.refused(ctx.channel(), why);
        ctx.writeAndFlush(frame(exchange.refusal("authentication failed"))).addListener(ChannelFutureListener.CLOSE);
    }

    private void cancelDeadline() {
        if (deadline != null) {
            deadline.cancel(false);
        }
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        cancelDeadline();
    }

    static ByteBuf frame(byte[] body) {
        return Unpooled.wrappedBuffer(Unpooled.buffer(4).writeInt(body.length), Unpooled.wrappedBuffer(body));
    }
}
