/**
 * Implementation of the ucx transport: the UCX worker loop, the control protocol, server and client. Not an API: use
 * {@link io.viper.transfer.ucx.UcxTransportProvider} through the transport SPI.
 */
package io.viper.transfer.ucx.internal;
