/**
 * The Kafka notifier ({@code kafka://host:port[,host:port...][?topic=viper.models]}): manifests are records of a
 * compacted topic keyed by model name, so that a consumer that starts late, or restarts, reads the latest manifest of
 * each model from the topic. Only {@link io.viper.notify.kafka.KafkaNotifierProvider} is public API; the rest lives in
 * {@code io.viper.notify.kafka.internal}.
 */
package io.viper.notify.kafka;
