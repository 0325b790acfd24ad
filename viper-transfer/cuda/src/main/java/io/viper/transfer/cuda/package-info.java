/**
 * GPU transports and the jcuda {@link io.viper.spi.GpuProvider}: {@code cuda-ipc://} (same node, CUDA IPC, device to
 * device), {@code cuda-pipe://} (across nodes: device to pinned host, TCP, pinned host to device, overlapped chunk by
 * chunk) and {@link io.viper.transfer.cuda.JCudaGpuProvider}. Without a CUDA driver every entry point reports
 * {@code "no CUDA driver/device: ..."}. Implementation classes live in {@code io.viper.transfer.cuda.internal}.
 */
package io.viper.transfer.cuda;
