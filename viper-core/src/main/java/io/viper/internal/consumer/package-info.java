/**
 * The consumer's half of Viper: from the notifier to the swap. The {@code ManifestTracker} hears manifests; the
 * {@code Fetcher} orders a version's locations with the {@code PathSelector} (the bytes its announcement carried among
 * them), loads from the first that works with that location's {@code Loader}, checks every tensor with the
 * {@code Verifier}, and the {@code ServingModel} swaps it in, on one route from whichever thread holds its load lock.
 * Uses the producer's half not at all (a rule of viper-architecture); what both use is in {@code io.viper.internal}.
 * Not exported.
 */
package io.viper.internal.consumer;
