/**
 * What the Netty servers ({@code tcp://}, the embedded broker) and the embedded notifier's client do when a connection
 * starts (docs/architecture.md#security): {@link io.viper.netty.ServerSecurity} puts the per-peer connection limit,
 * TLS, the authentication handshake and the half-sent-frame guard at the head of a server's pipeline, ahead of its
 * frame decoder; {@link io.viper.netty.ClientSecurity} puts TLS and the handshake at the head of a client's. The
 * handshake itself is core's {@link io.viper.auth.Handshake}.
 */
package io.viper.netty;
