/**
 * Tensors and checkpoints: element types ({@link io.viper.tensor.DType}), tensor descriptions
 * ({@link io.viper.tensor.TensorInfo}), read-only off-heap tensor views ({@link io.viper.tensor.Tensor}) and model
 * versions ({@link io.viper.tensor.Checkpoint}).
 */
package io.viper.tensor;
