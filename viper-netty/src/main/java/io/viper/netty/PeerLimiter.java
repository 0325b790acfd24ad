package io.viper.netty;

import io.netty.channel.Channel;
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
    private static final AttributeKey<PeerLimit.Admission> COUNTED = AttributeKey.valueOf("viper.peer.counted");

    private final PeerLimit limit;

    PeerLimiter(String server, int perPeer) {
        this(server, perPeer, Integer.MAX_VALUE, Integer.MAX_VALUE);
    }

    PeerLimiter(String server, int perPeer, int total, int unauthenticated) {
        this.limit = new PeerLimit(server, perPeer, total, unauthenticated);
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        InetAddress peer = ((InetSocketAddress) ctx.channel().remoteAddress()).getAddress();
        Channel ch = ctx.channel();
        PeerLimit.Admission admission = limit.admit(peer, ch::close);
        if (admission == null) {
            ctx.close();
            return;
        }
        ch.attr(COUNTED).set(admission);
        super.channelActive(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        PeerLimit.Admission admission = ctx.channel().attr(COUNTED).getAndSet(null);
        if (admission != null) {
            admission.release();
        }
        super.channelInactive(ctx);
    }

    /** The connection of {@code ch} finished its handshake: it leaves the handshake slots. */
    static void authenticated(Channel ch) {
        PeerLimit.Admission admission = ch.attr(COUNTED).get();
        if (admission != null) {
            admission.authenticated();
        }
    }
}
