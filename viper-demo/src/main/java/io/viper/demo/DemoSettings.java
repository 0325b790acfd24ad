package io.viper.demo;

import io.viper.scheduler.CheckpointPlanner.Algorithm;
import java.util.List;
import java.util.stream.Stream;

/**
 * The settings of one {@code viper demo}, already checked by the command line.
 *
 * @param policies the checkpoint policies to run, in this order, each once
 * @param end the last training iteration e
 * @param warmup the warm-up end s (the curve is fitted on iterations 1..s)
 * @param paceNanos training time per iteration, also {@code t_train}
 * @param rate inference requests per second
 * @param transport how checkpoints travel
 * @param notifier the notifier both processes use ({@code embedded://...:0}: the producer hosts one on a free port)
 * @param seed the seed of the data, the weights and the requests
 */
public record DemoSettings(List<Algorithm> policies, long end, long warmup, long paceNanos, double rate, DemoTransport transport,
                           String notifier, long seed) {
    /** Every policy, the {@code epoch} baseline first, then the others in the planner's order. */
    public static final List<Algorithm> ALL_POLICIES = Stream.concat(Stream.of(Algorithm.EPOCH),
            Stream.of(Algorithm.values()).filter(a -> a != Algorithm.EPOCH)).toList();

    /** Copies the policies. */
    public DemoSettings {
        policies = List.copyOf(policies);
    }

    /** The requests each run serves, {@code floor((e - s) * pace * rate)}. */
    public int requests() {
        return DemoConsumer.requestCount(end, warmup, paceNanos, rate);
    }

    /** The length of one run's training after the warm-up, in seconds. */
    public double runSeconds() {
        return (end - warmup) * paceNanos / 1e9;
    }
}
