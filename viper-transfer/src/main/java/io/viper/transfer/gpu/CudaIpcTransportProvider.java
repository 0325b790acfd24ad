package io.viper.transfer.gpu;

import io.viper.manifest.Tier;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.transfer.gpu.internal.Cuda;
import io.viper.transfer.gpu.internal.IpcClient;
import io.viper.transfer.gpu.internal.IpcServer;
import java.net.URI;
import java.util.Map;
import java.util.Optional;

/**
 * Same-node GPU transport {@code cuda-ipc://host:port}: the consumer maps the producer's GPU staging buffer with CUDA IPC and copies it device to device into its own GPU buffer, under a read lease taken on a TCP control channel (see {@link io.viper.transfer.gpu.internal.IpcServer}). Preferred over {@code cuda-pipe} on the GPU tier.
 *
 * <p>{@link #unavailableReason()} is {@code "no CUDA driver/device: <detail>"} where CUDA does not
 * work; constructing the provider loads nothing.
 */
public final class CudaIpcTransportProvider implements TransportProvider {
    @Override
    public String scheme() {
        return "cuda-ipc";
    }

    @Override
    public Tier tier() {
        return Tier.GPU;
    }

    @Override
    public int priority() {
        return 0;
    }

    @Override
    public Optional<String> unavailableReason() {
        return Cuda.unavailableReason();
    }

    @Override
    public TransportServer openServer(URI bind, Map<String, String> config) {
        Cuda.ensure();
        return new IpcServer(bind);
    }

    @Override
    public TransportClient openClient(Map<String, String> config) {
        Cuda.ensure();
        return new IpcClient(timeoutMs(config));
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
