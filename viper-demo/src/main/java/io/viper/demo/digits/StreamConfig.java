package io.viper.demo.digits;

import io.viper.errors.ViperConfigException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * The configuration of a {@link ContinualDigitsStream}: immutable, any thread may use it.
 *
 * @param horizon number of training iterations over which the distribution changes; positions at or beyond it see the
 *     final distribution (all stages, full rotation)
 * @param stages groups of digits; stage {@code k} of {@code S} starts to arrive at position {@code k * horizon / S}.
 *     Every digit 0..9 appears in exactly one stage. A single stage holding all digits disables the class-incremental
 *     effect.
 * @param rampFraction fraction of the horizon over which a new stage's weight grows from 0 to full (0 = switch on at
 *     once), at most {@code 1 / stages.size()}
 * @param maxRotationDegrees rotation reached at the horizon (0 disables the drift), -90..90
 * @param holdOutFraction fraction of each class reserved for requests, 0.05..0.95
 * @param seed seed of the split and of the training batches
 */
public record StreamConfig(
        long horizon,
        List<int[]> stages,
        double rampFraction,
        double maxRotationDegrees,
        double holdOutFraction,
        long seed) {
    public StreamConfig {
        if (horizon < 1) {
            throw new ViperConfigException("stream horizon: " + horizon + ", expected >= 1 iterations");
        }
        Objects.requireNonNull(stages, "stages");
        if (stages.isEmpty()) {
            throw new ViperConfigException("stream stages: empty, expected groups of digits covering 0..9");
        }
        boolean[] seen = new boolean[DigitsDataset.CLASSES];
        List<int[]> copy = new ArrayList<>(stages.size());
        for (int[] stage : stages) {
            if (stage == null || stage.length == 0) {
                throw new ViperConfigException("stream stages: a stage is empty");
            }
            for (int d : stage) {
                if (d < 0 || d >= DigitsDataset.CLASSES) {
                    throw new ViperConfigException("stream stages: digit " + d + " is not 0..9");
                }
                if (seen[d]) {
                    throw new ViperConfigException("stream stages: digit " + d + " appears in more than one stage");
                }
                seen[d] = true;
            }
            copy.add(stage.clone());
        }
        for (int d = 0; d < seen.length; d++) {
            if (!seen[d]) {
                throw new ViperConfigException("stream stages: digit " + d + " is in no stage");
            }
        }
        stages = List.copyOf(copy);
        if (!(rampFraction >= 0 && rampFraction <= 1.0 / stages.size())) {
            throw new ViperConfigException(
                    "stream rampFraction: " + rampFraction + ", expected 0.." + (1.0 / stages.size()));
        }
        if (!(maxRotationDegrees >= -90 && maxRotationDegrees <= 90)) {
            throw new ViperConfigException("stream maxRotationDegrees: " + maxRotationDegrees + ", expected -90..90");
        }
        if (!(holdOutFraction >= 0.05 && holdOutFraction <= 0.95)) {
            throw new ViperConfigException("stream holdOutFraction: " + holdOutFraction + ", expected 0.05..0.95");
        }
    }

    /** {@link #stages()} returns copies so that callers cannot change the config. */
    @Override
    public List<int[]> stages() {
        return stages.stream().map(int[]::clone).toList();
    }

    /** Equal when every component is, stages compared by content. */
    @Override
    public boolean equals(Object o) {
        return o instanceof StreamConfig c
                && horizon == c.horizon
                && stagesEqual(stages, c.stages)
                && Double.compare(rampFraction, c.rampFraction) == 0
                && Double.compare(maxRotationDegrees, c.maxRotationDegrees) == 0
                && Double.compare(holdOutFraction, c.holdOutFraction) == 0
                && seed == c.seed;
    }

    private static boolean stagesEqual(List<int[]> a, List<int[]> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (!Arrays.equals(a.get(i), b.get(i))) {
                return false;
            }
        }
        return true;
    }

    @Override
    public int hashCode() {
        int h = Long.hashCode(horizon);
        for (int[] st : stages) {
            h = 31 * h + Arrays.hashCode(st);
        }
        h = 31 * h + Double.hashCode(rampFraction);
        h = 31 * h + Double.hashCode(maxRotationDegrees);
        h = 31 * h + Double.hashCode(holdOutFraction);
        return 31 * h + Long.hashCode(seed);
    }

    @Override
    public String toString() {
        return "StreamConfig[horizon=" + horizon + ", stages="
                + stages.stream().map(Arrays::toString).toList()
                + ", rampFraction=" + rampFraction + ", maxRotationDegrees=" + maxRotationDegrees
                + ", holdOutFraction=" + holdOutFraction + ", seed=" + seed + "]";
    }

    /**
     * The demo defaults over {@code horizon} iterations: {@link ContinualDigitsStream#DEFAULT_STAGES}, ramps over 5% of
     * the horizon, 30 degrees of rotation at the end, 30% of each class held out for requests.
     */
    public static StreamConfig defaults(long horizon, long seed) {
        return new StreamConfig(horizon, ContinualDigitsStream.DEFAULT_STAGES, 0.05, 30.0, 0.3, seed);
    }

    /**
     * A stream that does not move, Viper's second scenario: every digit from the start, no rotation, 30% of each class
     * held out for requests; only training makes a fresher model better.
     */
    public static StreamConfig stationary(long horizon, long seed) {
        return new StreamConfig(horizon, List.of(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), 0, 0, 0.3, seed);
    }

    /** This config with other stages (the ramp shortened if it no longer fits one stage). */
    public StreamConfig withStages(List<int[]> newStages) {
        return new StreamConfig(
                horizon,
                newStages,
                Math.min(rampFraction, 1.0 / newStages.size()),
                maxRotationDegrees,
                holdOutFraction,
                seed);
    }

    /** This config with another ramp fraction. */
    public StreamConfig withRampFraction(double newRampFraction) {
        return new StreamConfig(horizon, stages, newRampFraction, maxRotationDegrees, holdOutFraction, seed);
    }

    /** This config with another final rotation. */
    public StreamConfig withMaxRotationDegrees(double degrees) {
        return new StreamConfig(horizon, stages, rampFraction, degrees, holdOutFraction, seed);
    }

    /** This config with another horizon. */
    public StreamConfig withHorizon(long newHorizon) {
        return new StreamConfig(newHorizon, stages, rampFraction, maxRotationDegrees, holdOutFraction, seed);
    }

    /** This config with another seed. */
    public StreamConfig withSeed(long newSeed) {
        return new StreamConfig(horizon, stages, rampFraction, maxRotationDegrees, holdOutFraction, newSeed);
    }
}
