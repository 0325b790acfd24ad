package io.viper.scheduler;

import io.viper.errors.ViperConfigException;

/**
 * What a request is charged in the cumulative inference loss (CIL), by the name the command line and JSON use. Both are
 * computed by {@link CilSimulator}; a {@link ScheduleInput} carries the {@link io.viper.predictor.StalenessModel} that
 * makes the difference.
 */
public enum Objective {
    /**
     * Viper's: a request costs the training loss {@code L(c)} of the version c that serves it, as if a model's loss did
     * not change while it serves.
     */
    VIPER,
    /**
     * Staleness-aware: a request at iteration t costs {@code L(c) + rate * (t - c)}, the loss growing with how far the
     * stream has moved since version c was trained. With a rate of 0 it is {@link #VIPER}.
     */
    STALENESS;

    /** The lower-case name, {@code viper} or {@code staleness}. */
    public String displayName() {
        return EnumNames.displayName(this);
    }

    /** Every name, for help texts and errors. */
    public static String names() {
        return EnumNames.names(values());
    }

    /**
     * The objective named {@code name}, ignoring case and surrounding blanks.
     *
     * @throws ViperConfigException for an unknown name, listing the known ones
     */
    public static Objective parse(String name) {
        return EnumNames.parse(values(), "objective", name);
    }
}
