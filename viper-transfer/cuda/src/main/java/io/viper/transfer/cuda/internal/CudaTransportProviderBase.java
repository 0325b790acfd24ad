package io.viper.transfer.cuda.internal;

import io.viper.ViperConfig;
import io.viper.auth.ClientAuth;
import io.viper.auth.Role;
import io.viper.manifest.Tier;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import java.net.URI;
import java.util.Optional;
import java.util.function.BiFunction;

/**
 * What the two GPU transports share: the GPU tier, the "no CUDA driver/device" probe, and a check that CUDA works
 * before a server or client is opened. Stateless; thread-safe.
 */
public abstract class CudaTransportProviderBase implements TransportProvider {
    private final String scheme;
    private final int priority;
    private final BiFunction<URI, ViperConfig, TransportServer> server;
    private final ClientFactory client;

    /** How a GPU transport makes its client: the transfer timeout in ms, and the credentials it proves. */
    @FunctionalInterface
    protected interface ClientFactory {
        TransportClient open(int timeoutMs, ClientAuth auth);
    }

    protected CudaTransportProviderBase(
            String scheme, int priority, BiFunction<URI, ViperConfig, TransportServer> server, ClientFactory client) {
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
    public final TransportServer openServer(URI bind, ViperConfig config) {
        Cuda.ensure();
        return server.apply(bind, config);
    }

    /** Opens the consumer side; its reads fail after {@code viper.transfer.timeout.ms} (socket timeouts are ints). */
    @Override
    public final TransportClient openClient(ViperConfig config) {
        Cuda.ensure();
        return client.open(
                (int) Math.min(Integer.MAX_VALUE, config.get(ViperConfig.TRANSFER_TIMEOUT_MS)),
                ClientAuth.of(config, Role.CONSUMER));
    }
}
