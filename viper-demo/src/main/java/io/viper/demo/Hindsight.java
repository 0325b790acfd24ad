package io.viper.demo;

import io.viper.demo.digits.ContinualDigitsStream;
import io.viper.demo.digits.InferenceModel;
import io.viper.demo.digits.Trainer;
import io.viper.scheduler.HindsightPlanner;

/**
 * The demo's {@code hindsight} policy: the best schedule given what the runs recorded. The training is deterministic,
 * so the driver replays it and keeps every candidate version (every {@code grid}-th iteration); it scores each of them
 * on the requests it would answer, from the moment it would arrive (its iteration's time on the clock plus the update
 * latency the runs measured) until at most {@code span} iterations later, on {@link #SELECTION_REPLICAS} request
 * replicas that the consumer is never scored on; and {@link HindsightPlanner} picks the cheapest schedule within the
 * budget. The schedule is then run like any other, and scored on the consumer's replicas, so it cannot have overfitted
 * the requests it is judged on.
 *
 * @param checkpoints the chosen iterations
 * @param selectedCil its mean CIL over the selection replicas (what it expects to serve)
 * @param grid the candidates' spacing in iterations
 * @param span the most iterations one version may serve
 * @param latencySeconds the update latency assumed
 */
public record Hindsight(long[] checkpoints, double selectedCil, int grid, int span, double latencySeconds) {
    /** How many request replicas the schedule is chosen on (other than the consumer's). */
    public static final int SELECTION_REPLICAS = 4;
    /** At most this many candidate versions. */
    private static final int MAX_CANDIDATES = 900;

    /** Copies the checkpoints. */
    public Hindsight {
        checkpoints = checkpoints.clone();
    }

    /** A copy of the checkpoints. */
    @Override
    public long[] checkpoints() {
        return checkpoints.clone();
    }

    /**
     * The best schedule of at most {@code plan.budget()} checkpoints for the run of {@code s}, versions arriving
     * {@code latencySeconds} after their iteration.
     */
    public static Hindsight choose(DemoSettings s, DemoPlan plan, double latencySeconds) {
        int m = (int) (s.end() - s.warmup());
        int grid = Math.max(1, Math.ceilDiv(m, MAX_CANDIDATES));
        int candidates = m / grid;
        int budget = plan.budget();
        int span = Math.min(m, Math.max(200, 4 * m / budget));
        int gap = Math.max(Math.ceilDiv(candidates + 1, budget + 1), span / grid);
        int requests = s.requests();
        double pace = s.paceNanos() / 1e9;
        // the slot each candidate's version arrives at; 0 is the warm-up version, candidates + 1 the end
        int[] arrival = new int[candidates + 2];
        for (int i = 1; i <= candidates; i++) {
            arrival[i] = (int) Math.min(requests, Requests.firstAt((i * grid - 1) * pace + latencySeconds, s.rate()));
        }
        arrival[candidates + 1] = requests;
        float[][][] x = new float[SELECTION_REPLICAS][requests][];
        int[][] label = new int[SELECTION_REPLICAS][requests];
        ContinualDigitsStream stream = s.workload().stream(s.end(), s.seed());
        for (int r = 0; r < SELECTION_REPLICAS; r++) {
            for (int k = 0; k < requests; k++) {
                long pos = Math.min(Requests.position(s.warmup(), k, s.rate(), s.paceNanos()), s.end());
                ContinualDigitsStream.Example e =
                        stream.sampleRequest(pos, Requests.generator(s.seed(), s.replicas() + r, k));
                x[r][k] = e.x();
                label[r][k] = e.label();
            }
        }
        // prefix sums of each candidate's mean loss over the slots it may serve
        double[][] prefix = new double[candidates + 1][];
        Trainer trainer = s.workload().trainer(s.end(), s.seed());
        while (trainer.iteration() < s.warmup()) {
            trainer.step();
        }
        for (int i = 0; i <= candidates; i++) {
            if (i > 0) {
                for (int g = 0; g < grid; g++) {
                    trainer.step();
                }
            }
            InferenceModel version = trainer.snapshot();
            int from = arrival[i];
            int to = arrival[Math.min(candidates + 1, i + gap)];
            double[] p = new double[to - from + 1];
            for (int k = from; k < to; k++) {
                double sum = 0;
                for (int r = 0; r < SELECTION_REPLICAS; r++) {
                    sum += version.loss(x[r][k], label[r][k]);
                }
                p[k - from + 1] = p[k - from] + sum / SELECTION_REPLICAS;
            }
            prefix[i] = p;
        }
        HindsightPlanner.Result best = HindsightPlanner.plan(
                new HindsightPlanner.ServingCosts() {
                    @Override
                    public int candidates() {
                        return candidates;
                    }

                    @Override
                    public long iteration(int i) {
                        return s.warmup() + (long) i * grid;
                    }

                    @Override
                    public double cost(int from, int to) {
                        return prefix[from][arrival[to] - arrival[from]];
                    }
                },
                budget,
                gap);
        return new Hindsight(best.checkpoints(), best.cost(), grid, span, latencySeconds);
    }
}
