/**
 * The GPU path on jcuda: the {@link io.viper.spi.GpuProvider} and the {@code cuda-ipc://} (same
 * node) and {@code cuda-pipe://} (across nodes) transports.
 */
module io.viper.transport.cuda {
    requires io.viper.core;
    requires jcuda;

    exports io.viper.transfer.gpu;

    provides io.viper.spi.TransportProvider with
            io.viper.transfer.gpu.CudaIpcTransportProvider,
            io.viper.transfer.gpu.CudaPipeTransportProvider;
    provides io.viper.spi.GpuProvider with io.viper.transfer.gpu.JCudaGpuProvider;
}
