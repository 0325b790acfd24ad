package io.viper.scheduler;

/**
 * One way of choosing checkpoint iterations over the input of a {@link CilSimulator}. The implementations here are
 * {@link FixedAlgorithm}, {@link AdaptiveAlgorithm}, {@link OptimalAlgorithm}, {@link EpochAlgorithm} and
 * {@link NoneAlgorithm}, one per {@link CheckpointPlanner.Algorithm}; {@link CheckpointPlanner#plan} picks them by
 * name.
 *
 * <p>Implementations are immutable, deterministic (the same input gives the same schedule) and may be called from any
 * thread.
 */
public interface ScheduleAlgorithm {
    /** The lower-case name the schedule carries ({@link Schedule#algorithm()}), e.g. {@code fixed}. */
    String name();

    /**
     * The schedule over {@code simulator}'s input, its CIL computed by {@code simulator}.
     *
     * @throws io.viper.errors.ViperConfigException if the input is out of this algorithm's reach
     */
    Schedule schedule(CilSimulator simulator);
}
