package io.viper.spi;

import io.viper.ViperConfig;
import io.viper.config.ConfigKey;
import io.viper.manifest.Tier;
import java.net.URI;
import java.util.List;
import java.util.Optional;

/**
 * A transport implementation, found with {@link java.util.ServiceLoader} and chosen by URI scheme ({@code ucx},
 * {@code tcp}, {@code file}, {@code cuda-ipc}, ...). Implementations must be cheap to construct: native libraries are
 * probed in {@link #unavailableReason()}, not in the constructor.
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
     * The configuration keys this transport declares (its own {@code viper.<scheme>.*} settings), so that
     * {@link ViperConfig} accepts and validates them and {@code viper config} lists them. Keys core declares (such as
     * {@link ViperConfig#TRANSFER_TIMEOUT_MS}) are read from there, not declared again.
     */
    default List<ConfigKey<?>> configKeys() {
        return List.of();
    }

    /**
     * Starts serving: binds to {@code bind} (e.g. {@code tcp://127.0.0.1:0}; port 0 picks a free one).
     *
     * @param config the validated configuration; read with {@code config.get(KEY)}
     */
    TransportServer openServer(URI bind, ViperConfig config);

    /** Opens the consumer side; {@code config} as for {@link #openServer}. */
    TransportClient openClient(ViperConfig config);
}
