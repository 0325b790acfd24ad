/**
 * The two processes of {@code viper demo}: {@link io.viper.examples.demo.DemoProducer} (trains the
 * digits network and publishes through Viper at given iterations, paced by a shared clock) and
 * {@link io.viper.examples.demo.DemoConsumer} (serves a fixed-rate request stream with the model it
 * holds and measures the real loss of every request). They talk to the driver through JSON lines on
 * standard output and commands on standard input, and to each other only through Viper.
 */
package io.viper.examples.demo;
