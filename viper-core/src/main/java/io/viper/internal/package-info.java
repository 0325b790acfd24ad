/**
 * What a {@code Viper} instance's producers and consumers share: the runtime (notifier, transport servers and clients,
 * PFS repository, hash pool), metrics, the instances' registry, tensor hashes in pieces and the threads that help a
 * copy. The producer's half is in {@code .producer}, the consumer's in {@code .consumer}. Not exported.
 */
package io.viper.internal;
