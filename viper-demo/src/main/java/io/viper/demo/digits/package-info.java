/**
 * The machine-learning workload of the Viper demo, in plain Java on float arrays: a continual-learning digit classifier
 * whose request distribution changes while it trains, so that serving a fresher checkpoint lowers the cumulative
 * inference loss (CIL).
 *
 * <ul>
 *   <li>{@link io.viper.demo.digits.DigitsDataset}: the bundled 8x8 digits data (1,797 images).
 *   <li>{@link io.viper.demo.digits.ContinualDigitsStream}: training batches and inference requests at a position
 *       (training iteration); digits arrive in stages and images rotate slowly; 30% of the images are held out for
 *       requests.
 *   <li>{@link io.viper.demo.digits.Mlp}: 64 -> hidden -> 10 network with Adam or SGD; its parameters are four named
 *       float arrays ({@code dense1.weight} ...), the tensors a producer publishes.
 *   <li>{@link io.viper.demo.digits.InferenceModel}: a read-only, thread-safe model built from those arrays, what a
 *       consumer serves.
 *   <li>{@link io.viper.demo.digits.Trainer}: one {@code step()} per training iteration.
 *   <li>{@link io.viper.demo.digits.ServingStats}: per-request losses, CIL, accuracy, time series.
 *   <li>{@link io.viper.demo.digits.LossLogExample} and {@link io.viper.demo.digits.DigitsWorkloadReport}: runnable
 *       mains.
 * </ul>
 *
 * <p>A producer loop looks like: {@code double loss = trainer.step();} then, when the policy says so, publish
 * {@code trainer.model().parameters()} with {@code trainer.model().shapes()}. A consumer rebuilds
 * {@code InferenceModel.fromParameters(params, shapes)} from each checkpoint it receives, swaps it in, and answers
 * {@code stream.sampleRequest(position, rng)} with it, recording the outcome in a {@code ServingStats}.
 */
package io.viper.demo.digits;
