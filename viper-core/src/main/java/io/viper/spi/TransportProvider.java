package io.viper.spi;

import io.viper.manifest.Tier;
import java.net.URI;
import java.util.Map;
import java.util.Optional;

/**
 * A transport implementation, found with {@link java.util.ServiceLoader} and chosen by URI scheme
 * ({@code ucx}, {@code tcp}, {@code file}, {@code cuda-ipc}, ...). Implementations must be cheap to
 * construct: native libraries are probed in {@link #unavailableReason()}, not in the constructor.
 */
public interface TransportProvider {
    /** The URI scheme this transport serves, lower case. */
    String scheme();

    /** The tier its locations live in. */
    Tier tier();

    /** Among usable locations of the same tier, lower is preferred (ucx before tcp). */
    int priority();

    /** Empty when this transport works here; otherwise one line saying why not (library missing...). */
    Optional<String> unavailableReason();

    /**
     * Starts serving: binds to {@code bind} (e.g. {@code tcp://127.0.0.1:0}; port 0 picks a free one).
     *
     * @param config transport settings ({@code viper.*} keys), never null
     */
    TransportServer openServer(URI bind, Map<String, String> config);

    /** Opens the consumer side. */
    TransportClient openClient(Map<String, String> config);
}
