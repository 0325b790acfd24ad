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
     * Two losses on the same sample, and the current model's loss on a fixed panel.
     *
     * @param deployed the mean loss of the version consumers hold
     * @param current the mean loss of the model as trained now (what publishing would deploy)
     * @param panel the current model's loss on a panel of requests that stays the same from one iteration to the next
     *     (the same images, where the stream is now), or NaN: it follows one version's standing against the next, which
     *     a fresh sample every iteration hardly sees ({@link PanelLows})
     */
    record Measurement(double deployed, double current, double panel) {
        /** Two losses, no panel. */
        public Measurement(double deployed, double current) {
            this(deployed, current, Double.NaN);
        }

        /** What the deployed version loses per request more than the current model would. */
        public double gap() {
            return deployed - current;
        }
    }
}
