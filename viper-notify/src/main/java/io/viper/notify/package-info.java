/**
 * Notifiers: the embedded Netty publish/subscribe broker ({@code embedded://}) and the Kafka compacted-topic notifier ({@code kafka://}), found through the notifier SPI of viper-core.
 */
package io.viper.notify;
