package io.viper;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;

/**
 * Decides, once per training iteration, whether the producer publishes a checkpoint.
 *
 * <p>Called by {@code ViperProducer.step} on the training thread only, with iterations in increasing order;
 * implementations need not be thread-safe. Adaptive policies (viper-scheduler) use the observed losses to refit their
 * plan.
 */
@FunctionalInterface
public interface CheckpointPolicy {

    /**
     * Returns whether {@code iteration}, whose training loss was {@code loss}, publishes a checkpoint. Iterations
     * increase by at least one between calls.
     */
    boolean shouldPublish(long iteration, double loss);

    /** A short description for logs, e.g. {@code every(100)}. */
    default String describe() {
        return getClass().getSimpleName();
    }

    /** Publishes every {@code n}-th iteration (iterations n, 2n, 3n, ...). */
    static CheckpointPolicy every(long n) {
        if (n <= 0) {
            throw new ViperConfigException("every(n): n must be positive, got " + n);
        }
        return new CheckpointPolicy() {
            @Override
            public boolean shouldPublish(long iteration, double loss) {
                return iteration > 0 && iteration % n == 0;
            }

            @Override
            public String describe() {
                return "every(" + n + ")";
            }
        };
    }

    /** Publishes exactly at the given iterations. */
    static CheckpointPolicy atIterations(long... iterations) {
        if (iterations == null) {
            throw new ViperConfigException("atIterations(iterations): iterations must not be null");
        }
        long[] sorted = iterations.clone();
        Arrays.sort(sorted);
        return new CheckpointPolicy() {
            @Override
            public boolean shouldPublish(long iteration, double loss) {
                return Arrays.binarySearch(sorted, iteration) >= 0;
            }

            @Override
            public String describe() {
                return sorted.length <= 8
                        ? "atIterations" + Arrays.toString(sorted)
                        : "atIterations(" + sorted.length + " iterations)";
            }
        };
    }

    /** Never publishes from {@code step}; explicit {@code publish} calls still work. */
    static CheckpointPolicy never() {
        return new CheckpointPolicy() {
            @Override
            public boolean shouldPublish(long iteration, double loss) {
                return false;
            }

            @Override
            public String describe() {
                return "never()";
            }
        };
    }
}
