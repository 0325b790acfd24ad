package io.viper.transfer.gpu.internal;

import io.viper.errors.ViperConfigException;
import io.viper.manifest.Tier;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import java.net.URI;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * What the two GPU transports share: the GPU tier, the "no CUDA driver/device" probe, and a check
 * that CUDA works before a server or client is opened. Stateless; thread-safe.
 */
public abstract class CudaTransportProviderBase implements TransportProvider {
    private final String scheme;
    private final int priority;
    private final Function<URI, TransportServer> server;
    private final IntFunction<TransportClient> client;

    protected CudaTransportProviderBase(String scheme, int priority, Function<URI, TransportServer> server, IntFunction<TransportClient> client) {
        this.scheme = scheme;
        this.priority = priority;
        this.server = server;
        this.client = client;
    }

    @Override
    public final String scheme() {
        return scheme;
    }

    @Override
    public final Tier tier() {
        return Tier.GPU;
    }

    @Override
    public final int priority() {
        return priority;
    }

    @Override
    public final Optional<String> unavailableReason() {
        return Cuda.unavailableReason();
    }

    @Override
    public final TransportServer openServer(URI bind, Map<String, String> config) {
        Cuda.ensure();
        return server.apply(bind);
    }

    @Override
    public final TransportClient openClient(Map<String, String> config) {
        Cuda.ensure();
        return client.apply(timeoutMs(config));
    }

    /** {@code viper.transfer.timeout.ms} as an int number of milliseconds, validated. */
    public static int timeoutMs(Map<String, String> config) {
        String v = config.getOrDefault("viper.transfer.timeout.ms", "60000");
        try {
            return (int) Math.min(Integer.MAX_VALUE, Math.max(1, Long.parseLong(v.trim())));
        } catch (NumberFormatException e) {
            throw new ViperConfigException("invalid value '" + v + "' for viper.transfer.timeout.ms: not an integer");
        }
    }
}
