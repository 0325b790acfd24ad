/**
 * The continual-learning demo behind {@code viper demo}: {@link io.viper.demo.DemoRunner} plans a run
 * ({@link io.viper.demo.DemoPlan}, through the scheduler's {@code CheckpointPlanner}) and runs each checkpoint policy
 * in two processes, {@link io.viper.demo.DemoProducer} (trains the digits network and publishes through Viper at the
 * planned iterations, paced by a shared clock) and {@link io.viper.demo.DemoConsumer} (serves a fixed-rate request
 * stream with the model it holds and measures the real loss of every request). The processes talk to each other only
 * through Viper, and to the runner through the events of {@code io.viper.demo.internal.DemoEvents}.
 * {@link io.viper.demo.DemoReport} and {@link io.viper.demo.DemoPlot} show the {@link io.viper.demo.DemoResult}.
 */
package io.viper.demo;
