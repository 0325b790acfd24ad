package io.viper.transfer.gpu;

import io.viper.manifest.Tier;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.transfer.gpu.internal.Cuda;
import io.viper.transfer.gpu.internal.PipeClient;
import io.viper.transfer.gpu.internal.PipeServer;
import java.net.URI;
import java.util.Map;
import java.util.Optional;

/**
 * Cross-node GPU transport {@code cuda-pipe://host:port}: chunks go device to pinned host on the producer, over TCP, and pinned host to device on the consumer, the stages overlapped with triple buffering (see {@link io.viper.transfer.gpu.internal.ChunkPipeline}). Used when the UCX transport cannot move CUDA memory itself.
 *
 * <p>{@link #unavailableReason()} is {@code "no CUDA driver/device: <detail>"} where CUDA does not
 * work; constructing the provider loads nothing.
 */
public final class CudaPipeTransportProvider implements TransportProvider {
    @Override
    public String scheme() {
        return "cuda-pipe";
    }

    @Override
    public Tier tier() {
        return Tier.GPU;
    }

    @Override
    public int priority() {
        return 10;
    }

    @Override
    public Optional<String> unavailableReason() {
        return Cuda.unavailableReason();
    }

    @Override
    public TransportServer openServer(URI bind, Map<String, String> config) {
        Cuda.ensure();
        return new PipeServer(bind);
    }

    @Override
    public TransportClient openClient(Map<String, String> config) {
        Cuda.ensure();
        return new PipeClient(timeoutMs(config));
    }

    static int timeoutMs(Map<String, String> config) {
        String v = config.getOrDefault("viper.transfer.timeout.ms", "60000");
        try {
            return (int) Math.min(Integer.MAX_VALUE, Math.max(1, Long.parseLong(v.trim())));
        } catch (NumberFormatException e) {
            throw new io.viper.errors.ViperConfigException("invalid value '" + v + "' for viper.transfer.timeout.ms: not an integer");
        }
    }
}
