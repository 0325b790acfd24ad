package io.viper.scheduler;

import io.viper.errors.ViperConfigException;

/** {@code epoch}: a checkpoint at every multiple of {@code epochIters} in {@code s+1..e}, the usual baseline. */
public final class EpochAlgorithm implements ScheduleAlgorithm {
    private final long epochIters;

    /**
     * Every {@code epochIters} iterations.
     *
     * @throws ViperConfigException if {@code epochIters} is not positive
     */
    public EpochAlgorithm(long epochIters) {
        if (epochIters <= 0) {
            throw new ViperConfigException("epoch: epoch-iters must be positive, got " + epochIters);
        }
        this.epochIters = epochIters;
    }

    @Override
    public String name() {
        return CheckpointPlanner.Algorithm.EPOCH.displayName();
    }

    @Override
    public Schedule schedule(CilSimulator sim) {
        ScheduleInput in = sim.input();
        long first = (in.warmup() / epochIters + 1) * epochIters;
        int count = first > in.end() ? 0 : (int) ((in.end() - first) / epochIters + 1);
        long[] out = new long[count];
        for (int i = 0; i < count; i++) {
            out[i] = first + i * epochIters;
        }
        return sim.schedule(name(), out, "every " + epochIters + " iterations");
    }
}
