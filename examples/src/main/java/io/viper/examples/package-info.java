/**
 * Runnable SDK examples ({@link io.viper.examples.ProducerExample}, {@link io.viper.examples.ConsumerExample}),
 * the continual-learning demo workload ({@code digits}) and the demo's processes ({@code demo}).
 */
package io.viper.examples;
