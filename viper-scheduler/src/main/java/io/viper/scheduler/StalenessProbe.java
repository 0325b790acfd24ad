package io.viper.scheduler;

/**
 * The training loop's side of {@link OnlineCheckpointPolicy}: scores the version the consumers hold (the last one
 * published) and the current model on one and the same sample, so that their difference is what publishing now would
 * save per request. The sample should look like the requests (a validation batch drawn where the stream is now);
 * pairing both models on it cancels most of its noise.
 *
 * <p>Called on the training thread, from {@code producer.step}, at most once per iteration.
 */
@FunctionalInterface
public interface StalenessProbe {
    /**
     * The two losses at {@code iteration}, after that iteration's update.
     *
     * @param iteration the iteration being decided about
     */
    Measurement measure(long iteration);

    /**
     * Two losses on the same sample.
     *
     * @param deployed the mean loss of the version consumers hold
     * @param current the mean loss of the model as trained now (what publishing would deploy)
     */
    record Measurement(double deployed, double current) {
        /** What the deployed version loses per request more than the current model would. */
        public double gap() {
            return deployed - current;
        }
    }
}
