/**
 * JMH micro-benchmarks of the tensor format, hashing and transports; run with the viper-jmh jar, not part of the test
 * run.
 */
package io.viper.jmh;
