package io.viper.spi;

import io.viper.ViperConfig;
import io.viper.config.ConfigKey;
import java.net.URI;
import java.util.List;

/**
 * A notifier implementation, found with {@link java.util.ServiceLoader} and chosen by URI scheme ({@code embedded},
 * {@code kafka}).
 */
public interface NotifierProvider {
    /** Who opens the notifier: producers may host it ({@code embedded://}), consumers only connect. */
    enum Role {
        PRODUCER,
        CONSUMER
    }

    String scheme();

    /**
     * The configuration keys this notifier declares ({@code viper.<scheme>.*}); see
     * {@link TransportProvider#configKeys()}.
     */
    default List<ConfigKey<?>> configKeys() {
        return List.of();
    }

    /**
     * Opens a notifier at {@code uri}. For {@code embedded://host:port} a producer starts the broker there unless one
     * already answers; a consumer connects. {@code config} is validated; passthrough client settings are in
     * {@link ViperConfig#passthrough}.
     */
    Notifier open(URI uri, Role role, ViperConfig config);

    /**
     * Checks {@code uri} and {@code config} as {@link #open} would for a producer, without opening anything or reaching
     * the network, so that a long-running process refuses a bad address when it starts rather than at its first client.
     * Default: nothing to check.
     *
     * @throws io.viper.errors.ViperConfigException naming what is wrong
     */
    default void check(URI uri, ViperConfig config) {}
}
