package io.viper.demo;

import io.viper.demo.digits.ContinualDigitsStream;
import io.viper.demo.digits.Mlp;
import io.viper.demo.digits.StreamConfig;
import io.viper.demo.digits.Trainer;
import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** What the demo's producer trains on and its consumer is asked about. */
public enum DemoWorkload {
    /**
     * Digits arrive in four stages and images rotate slowly ({@link StreamConfig#defaults}): a stale model gets new
     * digits wrong.
     */
    STAGES("digits arrive in 4 stages, images rotate up to 30 deg"),
    /**
     * Every digit from the start, nothing moves ({@link StreamConfig#stationary}): only training makes a fresher model
     * better.
     */
    STATIONARY("all digits from the start, no drift"),
    /**
     * Every digit from the start, and every image rotates steadily, to {@value #DRIFT_DEGREES} degrees at the end (a
     * {@link StreamConfig#stationary} stream with rotation): a gradual drift with no stage to detect, so that nothing
     * is tuned to the staged stream's arrivals.
     */
    DRIFT("all digits from the start, images rotate steadily to 90 deg");

    /** The rotation the {@link #DRIFT} workload reaches at the end of the run (its description says it too). */
    public static final double DRIFT_DEGREES = 90;

    private final String description;

    DemoWorkload(String description) {
        this.description = description;
    }

    /** The lower-case name of the command line and the JSON. */
    public String displayName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** One line for the report. */
    public String description() {
        return description;
    }

    /** The stream over {@code horizon} iterations, seeded by {@code seed}. */
    public ContinualDigitsStream stream(long horizon, long seed) {
        return new ContinualDigitsStream(
                switch (this) {
                    case STAGES -> StreamConfig.defaults(horizon, seed);
                    case STATIONARY -> StreamConfig.stationary(horizon, seed);
                    case DRIFT -> StreamConfig.stationary(horizon, seed).withMaxRotationDegrees(DRIFT_DEGREES);
                });
    }

    /** The producer's training loop over this workload: the same losses and parameters in every process. */
    public Trainer trainer(long horizon, long seed) {
        return new Trainer(stream(horizon, seed), new Mlp(Mlp.Config.defaults(seed)), Trainer.DEFAULT_BATCH_SIZE);
    }

    /**
     * The workload named {@code name}, ignoring case and surrounding blanks.
     *
     * @throws ViperConfigException naming the known ones
     */
    public static DemoWorkload parse(String name) {
        for (DemoWorkload w : values()) {
            if (w.displayName().equalsIgnoreCase(name.strip())) {
                return w;
            }
        }
        throw new ViperConfigException("--workload '" + name.strip() + "': expected "
                + Arrays.stream(values()).map(DemoWorkload::displayName).collect(Collectors.joining(" or ")));
    }
}
