/**
 * Declared configuration keys, in the style of Kafka's {@code ConfigDef}: each key has a name, a type, a default, a
 * parser that validates, a doc line and the component that declares it. Core's keys live in
 * {@link io.viper.ViperConfig}; transports and notifiers declare theirs through {@code configKeys()} of their provider,
 * and {@link io.viper.ViperConfig#of} checks every {@code viper.*} key against the union.
 */
package io.viper.config;
