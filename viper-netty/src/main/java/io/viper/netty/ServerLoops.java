package io.viper.netty;

import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.ChannelGroupFuture;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The event loops of one Netty server and every channel it opened (its server channel and the accepted ones), made
 * together and shut down together: {@link #close} closes the channels, then stops the loops. The embedded broker and
 * the tcp transport's server each own one.
 *
 * <p>Thread-safe; {@link #close} may be called from one of the loops (it then does not wait for them).
 */
public final class ServerLoops implements AutoCloseable {
    /** How long {@link #close} waits for the channels to close, then for the loops to stop. */
    private static final long WAIT_SECONDS = 5;

    private final EventLoopGroup group;
    private final ChannelGroup channels;

    /**
     * @param name the threads' name prefix and the channel group's name
     * @param threads how many event loops (daemon threads)
     */
    public ServerLoops(String name, int threads) {
        this.group = new MultiThreadIoEventLoopGroup(
                threads, new DefaultThreadFactory(name, true), NioIoHandler.newFactory());
        this.channels = new DefaultChannelGroup(name, GlobalEventExecutor.INSTANCE, true);
    }

    /** The event loops, for the server's bootstrap and for tasks that must run on one of them. */
    public EventLoopGroup group() {
        return group;
    }

    /** Keeps {@code channel} for {@link #close}; a channel added after it is closed at once. */
    public void add(Channel channel) {
        channels.add(channel);
    }

    /** Stops the loops without waiting, for a server whose start failed before it had channels to close. */
    public void abandon() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
    }

    /** Closes every channel, then stops the loops; waits for each (up to 5 s) unless called on one of the loops. */
    @Override
    public void close() {
        ChannelGroupFuture closing = channels.close();
        boolean onLoop = false;
        for (EventExecutor e : group) {
            onLoop |= e.inEventLoop();
        }
        if (!onLoop) {
            closing.awaitUninterruptibly(WAIT_SECONDS, TimeUnit.SECONDS);
        }
        var terminated = group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        if (!onLoop) {
            terminated.awaitUninterruptibly(WAIT_SECONDS, TimeUnit.SECONDS);
        }
    }
}
