/**
 * Viper's transports: {@code ucx://} (jucx), {@code tcp://} (Netty), {@code file://} (the PFS
 * repository) and the CUDA paths ({@code cuda-ipc://}, {@code cuda-pipe://}). Only the provider
 * packages are exported; the rest is internal.
 */
module io.viper.transfer {
    requires io.viper.core;
    requires com.fasterxml.jackson.core;
    requires com.fasterxml.jackson.databind;
    requires io.netty.buffer;
    requires io.netty.codec;
    requires io.netty.common;
    requires io.netty.handler;
    requires io.netty.transport;
    requires jucx;
    requires jcuda;

    exports io.viper.transfer.gpu;
    exports io.viper.transfer.pfs;
    exports io.viper.transfer.tcp;
    exports io.viper.transfer.ucx;

    provides io.viper.spi.TransportProvider with
            io.viper.transfer.pfs.FileTransportProvider,
            io.viper.transfer.tcp.TcpTransportProvider,
            io.viper.transfer.ucx.UcxTransportProvider,
            io.viper.transfer.ucx.UcxCudaTransportProvider,
            io.viper.transfer.gpu.CudaIpcTransportProvider,
            io.viper.transfer.gpu.CudaPipeTransportProvider;
    provides io.viper.spi.RepositoryProvider with io.viper.transfer.pfs.PfsRepositoryProvider;
    provides io.viper.spi.GpuProvider with io.viper.transfer.gpu.JCudaGpuProvider;
}
