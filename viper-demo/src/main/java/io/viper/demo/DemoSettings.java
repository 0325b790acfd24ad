package io.viper.demo;

import io.viper.scheduler.Objective;
import java.util.List;
import java.util.OptionalInt;

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
 * @param workload what is trained and asked
 * @param budget the checkpoints every policy may take; empty: as many as {@code epoch} takes
 * @param objective what the scheduler's plans and predictions charge a request
 * @param replicas how many independent sets of requests each run is scored on (at least 1)
 */
public record DemoSettings(
        List<DemoPolicy> policies,
        long end,
        long warmup,
        long paceNanos,
        double rate,
        DemoTransport transport,
        String notifier,
        long seed,
        DemoWorkload workload,
        OptionalInt budget,
        Objective objective,
        int replicas) {
    /** The default number of request replicas. */
    public static final int DEFAULT_REPLICAS = 8;

    /** Copies the policies. */
    public DemoSettings {
        policies = List.copyOf(policies);
    }

    /**
     * The defaults for everything but the run's shape: staged digits, the epoch budget, the staleness-aware objective,
     * {@value #DEFAULT_REPLICAS} replicas.
     */
    public static DemoSettings of(
            List<DemoPolicy> policies,
            long end,
            long warmup,
            long paceNanos,
            double rate,
            DemoTransport transport,
            String notifier,
            long seed) {
        return new DemoSettings(
                policies,
                end,
                warmup,
                paceNanos,
                rate,
                transport,
                notifier,
                seed,
                DemoWorkload.STAGES,
                OptionalInt.empty(),
                Objective.STALENESS,
                DEFAULT_REPLICAS);
    }

    /** These settings on another workload. */
    public DemoSettings withWorkload(DemoWorkload w) {
        return new DemoSettings(
                policies, end, warmup, paceNanos, rate, transport, notifier, seed, w, budget, objective, replicas);
    }

    /** The requests each run serves per replica, {@code floor((e - s) * pace * rate)}. */
    public int requests() {
        return Requests.count(end, warmup, paceNanos, rate);
    }

    /**
     * Whether the predictor's curve is of held-out losses (the staleness-aware objective: the loss a request sees, on
     * the scale its drift is measured on) rather than of batch losses (Viper's).
     */
    public boolean curveOnHeldOutLosses() {
        return objective == Objective.STALENESS;
    }

    /** The length of one run's training after the warm-up, in seconds. */
    public double runSeconds() {
        return (end - warmup) * paceNanos / 1e9;
    }
}
