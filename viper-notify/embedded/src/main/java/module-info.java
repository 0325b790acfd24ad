/** The {@code embedded://} notifier: a Netty publish/subscribe broker, hosted by a producer or run on its own. */
module io.viper.notify.embedded {
    requires io.viper.core;
    requires io.viper.netty;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.common;
    requires io.netty.handler;
    requires io.netty.transport;

    exports io.viper.notify.embedded;

    provides io.viper.spi.NotifierProvider with
            io.viper.notify.embedded.EmbeddedNotifierProvider;
}
