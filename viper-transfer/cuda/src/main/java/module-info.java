/**
 * The GPU path on jcuda: the {@link io.viper.spi.GpuProvider} and the {@code cuda-ipc://} (same node) and
 * {@code cuda-pipe://} (across nodes) transports.
 */
module io.viper.transfer.cuda {
    requires io.viper.core;
    requires jcuda;

    exports io.viper.transfer.cuda;

    provides io.viper.spi.TransportProvider with
            io.viper.transfer.cuda.CudaIpcTransportProvider,
            io.viper.transfer.cuda.CudaPipeTransportProvider;
    provides io.viper.spi.GpuProvider with
            io.viper.transfer.cuda.JCudaGpuProvider;
}
