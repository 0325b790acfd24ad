/** What the Netty servers and clients share at connection start: authentication, TLS, connection limits. */
module io.viper.netty {
    requires transitive io.viper.core;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.common;
    requires transitive io.netty.handler;
    requires transitive io.netty.transport;

    exports io.viper.netty;
}
