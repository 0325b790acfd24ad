/**
 * Viper for DJL (Deep Java Library): {@link io.viper.djl.ViperTrainingListener}, the Java twin of Viper's Keras
 * callback, and {@link io.viper.djl.BlockParameters}, which describes a block's parameters to a producer and loads a
 * leased model into a block for inference.
 */
package io.viper.djl;
