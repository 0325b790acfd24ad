package io.viper.scheduler;

/**
 * {@code none}: no checkpoint at all; the consumer serves the warm-up model to the end, the baseline of doing nothing.
 */
public final class NoneAlgorithm implements ScheduleAlgorithm {
    /** The {@code none} algorithm; it holds no state. */
    public NoneAlgorithm() {}

    @Override
    public String name() {
        return CheckpointPlanner.Algorithm.NONE.displayName();
    }

    @Override
    public Schedule schedule(CilSimulator sim) {
        return sim.schedule(name(), new long[0], "the warm-up model only");
    }
}
