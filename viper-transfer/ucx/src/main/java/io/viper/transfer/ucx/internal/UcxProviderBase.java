package io.viper.transfer.ucx.internal;

import io.viper.ViperConfig;
import io.viper.config.ConfigKey;
import io.viper.errors.ViperException;
import io.viper.errors.ViperUnsupportedException;
import io.viper.manifest.Tier;
import io.viper.net.HostPort;
import io.viper.spi.GpuProvider;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.transfer.ucx.UcxConfig;
import java.net.URI;
import java.util.List;

/**
 * What the UCX transports share ({@code ucx://}, {@code ucx-cuda://}): scheme and tier from the {@link UcxMemoryMode},
 * the configuration keys, URI validation before anything native is touched, and a check of {@link #unavailableReason()}
 * before a server or client is opened. Stateless; thread-safe.
 */
public abstract class UcxProviderBase implements TransportProvider {
    private final UcxMemoryMode mode;
    private final int priority;

    protected UcxProviderBase(UcxMemoryMode mode, int priority) {
        this.mode = mode;
        this.priority = priority;
    }

    /** The keys of {@link UcxConfig}, the same for {@code ucx} and {@code ucx-cuda}. */
    @Override
    public final List<ConfigKey<?>> configKeys() {
        return UcxConfig.KEYS;
    }

    @Override
    public final String scheme() {
        return mode.scheme();
    }

    @Override
    public final Tier tier() {
        return mode.tier();
    }

    @Override
    public final int priority() {
        return priority;
    }

    /**
     * Starts the producer side bound to {@code bind}. Throws {@link io.viper.errors.ViperConfigException} for a bad
     * URI, and {@link ViperException} ({@code UNAVAILABLE}) where the transport does not work here.
     */
    @Override
    public final TransportServer openServer(URI bind, ViperConfig config) {
        HostPort.parse(bind, mode.scheme(), true).resolve();
        requireAvailable();
        return UcxServer.open(bind, config, mode);
    }

    /** Starts the consumer side; errors as for {@link #openServer}. */
    @Override
    public final TransportClient openClient(ViperConfig config) {
        requireAvailable();
        return UcxClient.open(config, mode);
    }

    private void requireAvailable() {
        unavailableReason().ifPresent(reason -> {
            // "no CUDA driver/device: ..." reads the same from every GPU entry point.
            throw new ViperUnsupportedException(
                    reason.startsWith(GpuProvider.NO_CUDA)
                            ? reason
                            : mode.scheme() + " transport unavailable: " + reason);
        });
    }
}
