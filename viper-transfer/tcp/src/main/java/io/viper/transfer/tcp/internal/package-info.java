/**
 * Implementation of the {@code tcp://} transport: the Netty server ({@link io.viper.transfer.tcp.internal.TcpServer}),
 * the NIO client ({@link io.viper.transfer.tcp.internal.TcpClient}) and the wire constants. Not an API.
 */
package io.viper.transfer.tcp.internal;
