/**
 * Implementation of the PFS repository and the {@code file://} transport: the repository's layout and atomic version
 * protocol ({@link io.viper.transfer.pfs.internal.PfsRepository}), the mapping reader
 * ({@link io.viper.transfer.pfs.internal.FileTransportClient}) and a small safetensors header writer and validating
 * parser. Not an API: use the providers in {@link io.viper.transfer.pfs}.
 */
package io.viper.transfer.pfs.internal;
