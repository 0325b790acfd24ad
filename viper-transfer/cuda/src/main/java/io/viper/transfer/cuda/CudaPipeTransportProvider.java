package io.viper.transfer.cuda;

import io.viper.transfer.cuda.internal.CudaTransportProviderBase;
import io.viper.transfer.cuda.internal.PipeClient;
import io.viper.transfer.cuda.internal.PipeServer;

/**
 * Cross-node GPU transport {@code cuda-pipe://host:port}: chunks go device to pinned host on the producer, over TCP,
 * and pinned host to device on the consumer, the stages overlapped with triple buffering (see
 * {@link io.viper.transfer.cuda.internal.ChunkPipeline}). Used when the UCX transport cannot move CUDA memory itself.
 *
 * <p>{@link #unavailableReason()} is {@code "no CUDA driver/device: <detail>"} where CUDA does not work; constructing
 * the provider loads nothing.
 */
public final class CudaPipeTransportProvider extends CudaTransportProviderBase {
    public CudaPipeTransportProvider() {
        super("cuda-pipe", 10, PipeServer::new, PipeClient::new);
    }
}
