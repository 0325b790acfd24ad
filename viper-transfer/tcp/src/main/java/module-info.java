/** The {@code tcp://} transport: a Netty server and an NIO client that reads into the destination. */
module io.viper.transfer.tcp {
    requires io.viper.core;
    requires io.viper.netty;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.common;
    requires io.netty.handler;
    requires io.netty.transport;

    exports io.viper.transfer.tcp;

    provides io.viper.spi.TransportProvider with
            io.viper.transfer.tcp.TcpTransportProvider;
}
