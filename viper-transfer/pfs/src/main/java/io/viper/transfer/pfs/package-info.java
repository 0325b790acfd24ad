/**
 * The parallel file system: the checkpoint repository ({@link io.viper.transfer.pfs.PfsRepositoryProvider}, scheme
 * {@code file}) that stores versions as standard safetensors files with atomic publication and retention, and the
 * {@code file://} transport ({@link io.viper.transfer.pfs.FileTransportProvider}) that reads or memory-maps them on the
 * consumer side.
 */
package io.viper.transfer.pfs;
