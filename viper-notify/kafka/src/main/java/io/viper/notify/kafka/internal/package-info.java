/**
 * Implementation of the Kafka notifier: URI and configuration parsing, the publishing side (topic creation, idempotent
 * acknowledged sends) and the following side (one polling thread per notifier that reads the topic from the start
 * without a consumer group). Not API: may change at any time.
 */
package io.viper.notify.kafka.internal;
