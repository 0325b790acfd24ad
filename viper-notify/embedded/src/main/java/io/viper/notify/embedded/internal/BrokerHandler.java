package io.viper.notify.embedded.internal;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import io.viper.netty.ClientSecurity;
import java.lang.System.Logger.Level;

/**
 * Inbound messages of one connection of a {@link BrokerLink}, as {@link NotifyDecoder} decodes them ahead of it:
 * WELCOME makes the connection ready, MANIFEST feeds the subscriptions, ACK and ERROR answer requests; the end of the
 * connection and what broke it go back to the link. Runs on the link's event loop.
 */
final class BrokerHandler extends ChannelInboundHandlerAdapter {
    private static final System.Logger LOG = System.getLogger(EmbeddedNotifier.class.getName());

    private final BrokerLink link;
    private final String name;

    BrokerHandler(BrokerLink link, String name) {
        this.link = link;
        this.name = name;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Channel ch = ctx.channel();
        switch ((NotifyMessage) msg) {
            case NotifyMessage.Welcome w -> link.welcomed(ch, w.idleMs());
            case NotifyMessage.Manifest m ->
                link.feed()
                        .offer(
                                m.model(),
                                m.announcement().manifest(),
                                m.announcement().data(),
                                "manifest of " + m.model() + " from the broker");
            case NotifyMessage.Ack ack -> link.requests().answer(ack.requestId(), ack);
            case NotifyMessage.Error error -> {
                if (!link.requests().answer(error.requestId(), error)) {
                    LOG.log(Level.WARNING, name + ": the broker reported: " + error.reason());
                }
            }
            // the decoder passes only the four above
            default -> link.closeWith(ch, "unexpected message from the broker: " + msg);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        link.disconnected(ctx.channel());
        super.channelInactive(ctx);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt == ClientSecurity.AUTHENTICATED) {
            ctx.writeAndFlush(NotifyProtocol.empty(ctx.alloc(), NotifyProtocol.HELLO))
                    .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (cause instanceof ClientSecurity.HandshakeFailed) {
            ctx.channel().attr(BrokerLink.REFUSED).set(Boolean.TRUE);
            link.closeWith(ctx.channel(), cause.getMessage());
            return;
        }
        if (cause instanceof NotifyDecoder.MalformedFrameException) {
            LOG.log(Level.WARNING, name + ": closing the broker connection: " + cause.getMessage());
            link.closeWith(ctx.channel(), "malformed frame from the broker: " + cause.getMessage());
            return;
        }
        String problem = cause instanceof DecoderException
                ? "malformed frame from the broker: " + BrokerLink.describe(cause)
                : BrokerLink.describe(cause);
        if (cause instanceof DecoderException) {
            LOG.log(Level.WARNING, name + ": closing the broker connection: " + problem);
        }
        link.closeWith(ctx.channel(), problem);
    }
}
