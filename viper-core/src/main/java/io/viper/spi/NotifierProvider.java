package io.viper.spi;

import java.net.URI;
import java.util.Map;

/**
 * A notifier implementation, found with {@link java.util.ServiceLoader} and chosen by URI scheme
 * ({@code embedded}, {@code kafka}).
 */
public interface NotifierProvider {
    /** Who opens the notifier: producers may host it ({@code embedded://}), consumers only connect. */
    enum Role { PRODUCER, CONSUMER }

    String scheme();

    /**
     * Opens a notifier at {@code uri}. For {@code embedded://host:port} a producer starts the broker
     * there unless one already answers; a consumer connects. {@code config} holds {@code viper.*}
     * and passthrough client settings; never null.
     */
    Notifier open(URI uri, Role role, Map<String, String> config);
}
