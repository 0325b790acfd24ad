package io.viper.transfer.cuda;

import io.viper.transfer.cuda.internal.CudaTransportProviderBase;
import io.viper.transfer.cuda.internal.IpcClient;
import io.viper.transfer.cuda.internal.IpcServer;

/**
 * Same-node GPU transport {@code cuda-ipc://host:port}: the consumer maps the producer's GPU staging buffer with CUDA
 * IPC and copies it device to device into its own GPU buffer, under a read lease taken on a TCP control channel (see
 * {@link io.viper.transfer.cuda.internal.IpcServer}). Preferred over {@code cuda-pipe} on the GPU tier.
 *
 * <p>{@link #unavailableReason()} is {@code "no CUDA driver/device: <detail>"} where CUDA does not work; constructing
 * the provider loads nothing.
 */
public final class CudaIpcTransportProvider extends CudaTransportProviderBase {
    public CudaIpcTransportProvider() {
        super("cuda-ipc", 0, IpcServer::new, IpcClient::new);
    }
}
