/**
 * Who may talk to whom (docs/architecture.md#authentication): a shared secret from a file, never on the command line
 * ({@link io.viper.auth.Secret}); the roles it grants ({@link io.viper.auth.Role}); and the challenge-response
 * handshake that opens every connection to a Viper server, in which both sides prove with HMAC-SHA256 over both sides'
 * random nonces that they hold the key, so the key never crosses the wire and a recorded exchange cannot be replayed
 * ({@link io.viper.auth.Handshake}). Servers run it with an {@link io.viper.auth.Authenticator}, clients with a
 * {@link io.viper.auth.ClientAuth}; {@link io.viper.auth.FrameAuth} runs either over a
 * {@link io.viper.net.FrameChannel}. Plain JDK, no Netty.
 */
package io.viper.auth;
