package io.viper.netty;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.ChannelHandler;
import io.netty.channel.embedded.EmbeddedChannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link PeerLimiter}: one instance shared by a server's connections, counting them per peer address. */
class PeerLimiterTest {
    private final PeerLimiter limiter = new PeerLimiter("test server", 2);
    private final List<EmbeddedChannel> channels = new ArrayList<>();

    @AfterEach
    void closeAll() {
        channels.forEach(EmbeddedChannel::finishAndReleaseAll);
    }

    /** An embedded channel with a peer address, which the limiter counts by. */
    private static final class PeerChannel extends EmbeddedChannel {
        private final SocketAddress remote;

        PeerChannel(InetSocketAddress remote, ChannelHandler handler) throws Exception {
            super(false, false, handler); // registered below, once the address is set
            this.remote = remote;
            register();
        }

        @Override
        protected SocketAddress remoteAddress0() {
            return remote;
        }
    }

    private EmbeddedChannel connect(String host, int port) throws Exception {
        EmbeddedChannel ch = new PeerChannel(new InetSocketAddress(host, port), limiter);
        channels.add(ch);
        return ch;
    }

    @Test
    void aConnectionBeyondTheLimitOfItsAddressIsClosedAtOnce() throws Exception {
        EmbeddedChannel first = connect("10.0.0.1", 1001);
        assertTrue(connect("10.0.0.1", 1002).isOpen());
        assertFalse(connect("10.0.0.1", 1003).isOpen(), "the third from 10.0.0.1");
        assertTrue(connect("10.0.0.2", 1001).isOpen(), "another address has a limit of its own");

        first.close();
        assertTrue(connect("10.0.0.1", 1004).isOpen(), "a closed connection no longer counts");
        assertFalse(connect("10.0.0.1", 1005).isOpen());
    }

    @Test
    void aRefusedConnectionDoesNotUseASlot() throws Exception {
        connect("10.0.0.3", 1);
        connect("10.0.0.3", 2);
        EmbeddedChannel refused = connect("10.0.0.3", 3);
        assertFalse(refused.isOpen());
        refused.close(); // already closed: releases nothing it never held
        assertFalse(connect("10.0.0.3", 4).isOpen(), "still two open from 10.0.0.3");
    }
}
