/**
 * Runnable SDK examples ({@link io.viper.examples.ProducerExample}, {@link io.viper.examples.ConsumerExample}) and the
 * continual-learning workload ({@code digits}) that {@code viper demo} (module viper-demo) runs.
 */
package io.viper.examples;
