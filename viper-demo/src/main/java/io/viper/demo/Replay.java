package io.viper.demo;

import io.viper.demo.digits.ContinualDigitsStream;
import io.viper.demo.digits.DigitClassifier;
import io.viper.demo.digits.InferenceModel;
import io.viper.demo.digits.Trainer;
import io.viper.scheduler.OnlineCheckpointPolicy;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * A demo's runs replayed in this process, for many seeds: the same plan ({@link DemoPlan#of}), the same policies (the
 * planned schedules, the {@link OnlineCheckpointPolicy} with its {@link ValidationProbe} deciding as the producer's
 * does, {@link Hindsight}), the same training and the same requests of every replica as {@link DemoConsumer} draws
 * them; only the transport is left out: a checkpoint published at iteration i serves from {@code (i - s - 1) * pace +
 * latency} on, the arrival {@link Hindsight} assumes, with the latency given rather than measured per update. A seed
 * takes a few seconds instead of a demo's minute and a half; {@link SeedSweep} runs many.
 *
 * <p>Stateless; one thread runs one replay.
 */
public final class Replay {
    private Replay() {}

    /**
     * One policy's replayed run.
     *
     * @param policy the policy
     * @param checkpoints the iterations it published
     * @param cils each replica's CIL
     * @param detail what the plan said about it (the schedule's description, empty for online and hindsight)
     */
    public record Run(DemoPolicy policy, long[] checkpoints, double[] cils, String detail) {
        /** The mean CIL over the replicas. */
        public double cil() {
            double sum = 0;
            for (double c : cils) {
                sum += c;
            }
            return sum / cils.length;
        }

        /** The sample standard deviation of the replicas' CILs (0 for one replica). */
        public double spread() {
            if (cils.length < 2) {
                return 0;
            }
            double m = cil();
            double ss = 0;
            for (double c : cils) {
                ss += (c - m) * (c - m);
            }
            return Math.sqrt(ss / (cils.length - 1));
        }
    }

    /**
     * Replays every policy of {@code s} on its seed.
     *
     * @param tSaveSeconds the producer's stall per checkpoint the plan assumes
     * @param latencySeconds the update latency: from a publish to the consumer serving it
     * @return the plan and one run per policy, in the settings' order
     */
    public static Result run(DemoSettings s, double tSaveSeconds, double latencySeconds) {
        DemoPlan plan = DemoPlan.of(s, tSaveSeconds, latencySeconds, true);
        Map<DemoPolicy, long[]> schedules = new LinkedHashMap<>();
        Map<DemoPolicy, String> details = new HashMap<>();
        for (DemoPolicy p : s.policies()) {
            if (p == DemoPolicy.HINDSIGHT) {
                schedules.put(p, Hindsight.choose(s, plan, latencySeconds).checkpoints());
                details.put(p, "");
            } else if (p == DemoPolicy.ONLINE) {
                OnlineCheckpointPolicy online = online(s, plan);
                schedules.put(p, online.publishedIterations());
                details.put(p, "changes detected at " + Arrays.toString(online.changes()));
            } else {
                schedules.put(p, plan.schedules().get(p).checkpoints());
                details.put(p, plan.schedules().get(p).detail());
            }
        }
        Map<Long, InferenceModel> versions = versions(s, schedules.values());
        List<Run> runs = new ArrayList<>();
        Batch requests = Batch.of(s);
        for (Map.Entry<DemoPolicy, long[]> e : schedules.entrySet()) {
            runs.add(new Run(
                    e.getKey(),
                    e.getValue(),
                    requests.score(s, e.getValue(), versions, latencySeconds),
                    details.get(e.getKey())));
        }
        return new Result(plan, runs);
    }

    /**
     * A seed's replay.
     *
     * @param plan what the scheduler planned
     * @param runs one per policy, in the settings' order
     */
    public record Result(DemoPlan plan, List<Run> runs) {
        /** The run of {@code p}, or null when it was not asked for. */
        public Run of(DemoPolicy p) {
            return runs.stream().filter(r -> r.policy() == p).findFirst().orElse(null);
        }
    }

    /** The online policy deciding as the producer's does, on the same training and probe; no re-planning. */
    private static OnlineCheckpointPolicy online(DemoSettings s, DemoPlan plan) {
        Trainer trainer = s.workload().trainer(s.end(), s.seed());
        while (trainer.iteration() < s.warmup()) {
            trainer.step();
        }
        ValidationProbe probe = new ValidationProbe(trainer.stream(), trainer.model(), trainer.snapshot(), s.seed());
        // The producer's re-plans only describe the plan (off the training thread); its decisions do not use them.
        OnlineCheckpointPolicy policy = new OnlineCheckpointPolicy(plan.online(), probe);
        for (long i = s.warmup() + 1; i <= s.end(); i++) {
            double loss = trainer.step();
            if (policy.shouldPublish(i, loss)) {
                probe.deployed(trainer.snapshot());
            }
        }
        return policy;
    }

    /** The versions every schedule publishes, by iteration, and the warm-up's. */
    private static Map<Long, InferenceModel> versions(DemoSettings s, Iterable<long[]> schedules) {
        TreeSet<Long> wanted = new TreeSet<>();
        wanted.add(s.warmup());
        for (long[] c : schedules) {
            for (long i : c) {
                wanted.add(i);
            }
        }
        Trainer trainer = s.workload().trainer(s.end(), s.seed());
        Map<Long, InferenceModel> out = new HashMap<>();
        while (trainer.iteration() < wanted.last()) {
            trainer.step();
            if (wanted.contains(trainer.iteration())) {
                out.put(trainer.iteration(), trainer.snapshot());
            }
        }
        return out;
    }

    /** Every request of every replica, drawn once as {@link DemoConsumer} draws them. */
    private record Batch(float[][][] x, int[][] label) {
        static Batch of(DemoSettings s) {
            int n = s.requests();
            float[][][] x = new float[s.replicas()][n][];
            int[][] label = new int[s.replicas()][n];
            ContinualDigitsStream stream = s.workload().stream(s.end(), s.seed());
            for (int k = 0; k < n; k++) {
                long pos = Math.min(Requests.position(s.warmup(), k, s.rate(), s.paceNanos()), s.end());
                for (int r = 0; r < s.replicas(); r++) {
                    ContinualDigitsStream.Example e = stream.sampleRequest(pos, Requests.generator(s.seed(), r, k));
                    x[r][k] = e.x();
                    label[r][k] = e.label();
                }
            }
            return new Batch(x, label);
        }

        double[] score(DemoSettings s, long[] checkpoints, Map<Long, InferenceModel> versions, double latency) {
            int n = s.requests();
            double pace = s.paceNanos() / 1e9;
            double[] cils = new double[s.replicas()];
            InferenceModel served = versions.get(s.warmup());
            int next = 0;
            for (int k = 0; k < n; k++) {
                while (next < checkpoints.length
                        && Requests.firstAt((checkpoints[next] - s.warmup() - 1) * pace + latency, s.rate()) <= k) {
                    served = versions.get(checkpoints[next++]);
                }
                for (int r = 0; r < cils.length; r++) {
                    float[] p = served.predictProba(x[r][k]);
                    cils[r] += DigitClassifier.crossEntropy(p, label[r][k]);
                }
            }
            return cils;
        }
    }
}
