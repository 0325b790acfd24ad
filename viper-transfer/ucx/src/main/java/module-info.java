/**
 * The {@code ucx://} transport (host memory over UCX shared memory or RDMA) and {@code ucx-cuda://} (GPU memory where
 * the installed UCX supports CUDA; CUDA itself is reached through core's {@link io.viper.spi.GpuProvider}).
 */
module io.viper.transfer.ucx {
    requires io.viper.core;
    requires jucx;

    exports io.viper.transfer.ucx;

    provides io.viper.spi.TransportProvider with
            io.viper.transfer.ucx.UcxTransportProvider,
            io.viper.transfer.ucx.UcxCudaTransportProvider;
}
