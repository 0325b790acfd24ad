package io.viper.netty;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.AttributeKey;
import io.viper.net.PeerLimit;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * Applies a {@link PeerLimit} at the head of a Netty server's pipelines: a connection beyond
 * {@code viper.limits.connections.per.peer} is closed before anything is read. One instance per server, shared by its
 * connections (on any of its event loops).
 */
@ChannelHandler.Sharable
final class PeerLimiter extends ChannelInboundHandlerAdapter {
    private static final AttributeKey<InetAddress> COUNTED = AttributeKey.valueOf("viper.peer.counted");

    private final PeerLimit limit;

    PeerLimiter(String server, int limit) {
        this.limit = new PeerLimit(server, limit);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        InetAddress peer = ((InetSocketAddress) ctx.channel().remoteAddress()).getAddress();
        if (!limit.admit(peer)) {
            ctx.close();
            return;
        }
        ctx.channel().attr(COUNTED).set(peer);
        super.channelActive(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        InetAddress peer = ctx.channel().attr(COUNTED).getAndSet(null);
        if (peer != null) {
            limit.release(peer);
        }
        super.channelInactive(ctx);
    }
}
