/**
 * The {@code tcp://} transport ({@link io.viper.transfer.tcp.TcpTransportProvider}): host-memory transfers over TCP
 * with a Netty server and a zero-copy NIO client. Implementation classes live in
 * {@code io.viper.transfer.tcp.internal}.
 */
package io.viper.transfer.tcp;
