/**
 * Transports: UCX (host shared memory/RDMA, GPU), TCP (Netty) and the PFS repository, found through the transport SPI of viper-core and chosen by URI scheme; the producer-side staging cache and consumer-side receive buffers.
 */
package io.viper.transfer;
