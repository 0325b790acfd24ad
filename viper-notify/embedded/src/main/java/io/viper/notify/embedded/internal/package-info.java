/**
 * Implementation of the {@code embedded://} notifier: the broker ({@link io.viper.notify.embedded.internal.Broker}),
 * the client ({@link io.viper.notify.embedded.internal.EmbeddedNotifier}) and the frame format. Not an API.
 */
package io.viper.notify.embedded.internal;
