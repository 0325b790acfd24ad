/**
 * The exception hierarchy of Viper. Everything extends the unchecked
 * {@link io.viper.errors.ViperException}; {@link io.viper.errors.RetriableViperException} and its
 * subtypes mark failures worth retrying.
 */
package io.viper.errors;
