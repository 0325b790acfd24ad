/**
 * Memory diagnostics: the {@link io.viper.memory.LeakDetector}, which names a {@link io.viper.ModelLease}
 * garbage-collected without {@code close()}. The memory budgets themselves (one per {@code Viper} instance, a child per
 * model; {@code viper.memory.host.budget.bytes}, {@code viper.memory.gpu.budget.bytes}) are internal; a refusal is a
 * {@link io.viper.errors.ViperMemoryException}.
 */
package io.viper.memory;
