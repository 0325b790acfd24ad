/** The {@code kafka://} notifier: manifests on a compacted topic, one record per model version. */
module io.viper.notify.kafka {
    requires io.viper.core;
    requires kafka.clients;

    exports io.viper.notify.kafka;

    provides io.viper.spi.NotifierProvider with
            io.viper.notify.kafka.KafkaNotifierProvider;
}
