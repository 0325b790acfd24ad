/**
 * Runnable SDK examples (ProducerExample, ConsumerExample) and the continual-learning demo workload.
 */
package io.viper.examples;
