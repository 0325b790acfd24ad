/**
 * The producer's half of Viper: from {@code step} or {@code publish} to the announcement. The training thread stages a
 * snapshot ({@code Stager} into a {@code StagingCache} buffer); the {@code PublishPipeline} hashes, exposes on the
 * transports, announces and flushes to the PFS, on one route whose thread it chooses. Uses the consumer's half not at
 * all (a rule of viper-architecture); what both use is in {@code io.viper.internal}. Not exported.
 */
package io.viper.internal.producer;
