package io.viper.scheduler;

import java.util.Locale;

/**
 * {@code online}: what {@link OnlineCheckpointPolicy} would publish if the losses were those predicted: the policy
 * (with {@link OnlineCheckpointPolicy.Config#of} for the input and a budget of {@code maxCheckpoints}) is run over
 * {@code s..e} with the curve as the training loss and a probe that reports the served loss {@code L(c) + rate * (t -
 * c)} of the deployed version c against {@code L(t)}. The plan the policy starts from; on a real run its probes measure
 * the gap instead of predicting it.
 */
public final class OnlineAlgorithm implements ScheduleAlgorithm {
    private final int budget;

    /**
     * The online policy's plan with a budget of {@code budget} checkpoints.
     *
     * @throws io.viper.errors.ViperConfigException if {@code budget} is below 1
     */
    public OnlineAlgorithm(int budget) {
        this.budget = CheckpointPlanner.checkCap(budget);
    }

    @Override
    public String name() {
        return CheckpointPlanner.Algorithm.ONLINE.displayName();
    }

    @Override
    public Schedule schedule(CilSimulator sim) {
        ScheduleInput in = sim.input();
        double[] serving = sim.servingLossesUnsafe();
        double rate = in.staleness().ratePerIteration();
        long s = in.warmup();
        OnlineCheckpointPolicy.Config cfg = OnlineCheckpointPolicy.Config.of(sim, budget);
        long[] deployed = {s};
        // L(c) + rate * (t - c) = serving(c) + rate * (t - s)
        StalenessProbe probe =
                t -> new StalenessProbe.Measurement(serving[(int) (deployed[0] - s)] + rate * (t - s), sim.loss(t));
        OnlineCheckpointPolicy policy = new OnlineCheckpointPolicy(cfg, probe);
        for (long t = s; t <= in.end(); t++) {
            if (policy.shouldPublish(t, sim.loss(t))) {
                deployed[0] = t;
            }
        }
        return sim.schedule(
                name(),
                policy.publishedIterations(),
                String.format(
                        Locale.ROOT,
                        "budget %d, gap threshold %.3g at first, spacing >= %d",
                        budget,
                        cfg.initialThreshold(),
                        cfg.minSpacing()));
    }
}
