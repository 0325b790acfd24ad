package io.viper.netty;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.viper.auth.ClientAuth;
import io.viper.auth.Handshake;
import java.util.List;

/**
 * The client's side of the {@link Handshake} at the head of a Netty pipeline (after TLS): answers the server's
 * challenge, checks its verdict, then steps out of the pipeline and fires {@link ClientSecurity#AUTHENTICATED}, after
 * which the client may speak its protocol. A failed handshake raises a {@link ClientSecurity.HandshakeFailed} whose
 * message is the one-line reason. One instance per connection, on its event loop.
 */
final class ClientAuthHandler extends ByteToMessageDecoder {
    private final ClientAuth.Attempt attempt;
    private boolean proved;

    ClientAuthHandler(ClientAuth.Attempt attempt) {
        this.attempt = attempt;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (in.readableBytes() < 4) {
            return;
        }
        int n = in.getInt(in.readerIndex());
        if (n < 1 || n > Handshake.MAX_FRAME) {
            in.skipBytes(in.readableBytes());
            throw new ClientSecurity.HandshakeFailed(
                    ctx.channel().remoteAddress() + " is not a Viper server of this version (no handshake)");
        }
        if (in.readableBytes() < 4 + n) {
            return;
        }
        in.skipBytes(4);
        byte[] frame = new byte[n];
        in.readBytes(frame);
        try {
            if (!proved) {
                proved = true;
                ctx.writeAndFlush(ServerAuthHandler.frame(attempt.proof(frame)))
                        .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
                return;
            }
            attempt.verdict(frame);
        } catch (Handshake.Refused e) {
            in.skipBytes(in.readableBytes());
            throw new ClientSecurity.HandshakeFailed(e.getMessage());
        }
        ctx.pipeline().remove(this);
        ctx.fireUserEventTriggered(ClientSecurity.AUTHENTICATED);
    }
}
