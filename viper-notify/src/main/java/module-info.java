/**
 * Viper's notifiers: {@code embedded://} (a Netty publish/subscribe broker) and {@code kafka://}
 * (a compacted topic). Only the provider packages are exported; the rest is internal.
 */
module io.viper.notify {
    requires io.viper.core;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.common;
    requires io.netty.handler;
    requires io.netty.transport;
    requires kafka.clients;

    exports io.viper.notify.embedded;
    exports io.viper.notify.kafka;

    provides io.viper.spi.NotifierProvider with
            io.viper.notify.embedded.EmbeddedNotifierProvider,
            io.viper.notify.kafka.KafkaNotifierProvider;
}
