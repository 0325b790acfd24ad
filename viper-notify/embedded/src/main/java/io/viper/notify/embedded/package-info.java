/**
 * The {@code embedded://} notifier ({@link io.viper.notify.embedded.EmbeddedNotifierProvider}) and its standalone
 * broker ({@link io.viper.notify.embedded.EmbeddedBroker}). Implementation classes live in
 * {@code io.viper.notify.embedded.internal}.
 */
package io.viper.notify.embedded;
