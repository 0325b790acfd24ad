/**
 * The {@code ucx://} transport ({@link io.viper.transfer.ucx.UcxTransportProvider}): checkpoints in host memory read
 * with UCX RDMA GETs, leases over a TCP control channel. Implementation classes live in
 * {@code io.viper.transfer.ucx.internal}.
 */
package io.viper.transfer.ucx;
