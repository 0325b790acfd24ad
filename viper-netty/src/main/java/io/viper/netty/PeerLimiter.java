package io.viper.netty;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.AttributeKey;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Counts one server's open connections per peer address and closes, at once and before anything is
 * read, each connection beyond {@code viper.limits.connections.per.peer}, so that one peer cannot
 * take every file descriptor and lock everyone else out. One instance per server, shared by its
 * connections (on any of its event loops).
 */
@ChannelHandler.Sharable
final class PeerLimiter extends ChannelInboundHandlerAdapter {
    private static final System.Logger LOG = System.getLogger(PeerLimiter.class.getName());
    private static final AttributeKey<Boolean> COUNTED = AttributeKey.valueOf("viper.peer.counted");

    private final String server;
    private final int limit;
    private final Map<InetAddress, Integer> open = new ConcurrentHashMap<>();
    private final Map<InetAddress, Boolean> warned = new ConcurrentHashMap<>();

    PeerLimiter(String server, int limit) {
        this.server = server;
        this.limit = limit;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        InetAddress peer = ((InetSocketAddress) ctx.channel().remoteAddress()).getAddress();
        int[] now = new int[1];
        open.compute(peer, (k, n) -> {
            now[0] = (n == null ? 0 : n) + 1;
            return now[0];
        });
        ctx.channel().attr(COUNTED).set(Boolean.TRUE);
        if (now[0] > limit) {
            if (warned.size() < 1_000 && warned.putIfAbsent(peer, Boolean.TRUE) == null) {
                LOG.log(Level.WARNING, server + ": " + peer.getHostAddress() + " holds " + limit
                        + " connections, the most one peer may (viper.limits.connections.per.peer); closing its next ones");
            }
            ctx.close();
            return;
        }
        super.channelActive(ctx);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        if (ctx.channel().attr(COUNTED).getAndSet(null) != null) {
            InetAddress peer = ((InetSocketAddress) ctx.channel().remoteAddress()).getAddress();
            open.computeIfPresent(peer, (k, n) -> n <= 1 ? null : n - 1);
        }
        super.channelInactive(ctx);
    }
}
