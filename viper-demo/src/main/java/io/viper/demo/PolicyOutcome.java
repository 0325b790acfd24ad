package io.viper.demo;

import io.viper.demo.internal.DemoEvents.ConsumerResult;
import io.viper.demo.internal.DemoEvents.ProducerResult;
import io.viper.demo.internal.DemoEvents.Update;
import io.viper.scheduler.Schedule;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * What one policy's run measured.
 *
 * @param policy the policy
 * @param schedule what was planned for it before the run (online: what it would do on the predicted losses)
 * @param predictedCil the CIL predicted for it: the scheduler's simulation of its schedule; for online the CIL its
 *     staleness probes predicted during the run; for hindsight its mean CIL on the replicas it was chosen on
 * @param tLoadSeconds the update latency its plan assumed
 * @param checkpoints the checkpoints the producer published
 * @param publishedIterations their iterations
 * @param cils each request replica's measured CIL: the sum of its served requests' losses
 * @param requests the requests served per replica
 * @param accuracy the share answered right over all replicas (NaN without requests)
 * @param swaps the updates after the warm-up model that reached the consumer
 * @param updateMsMean their mean latency from publish to swap (NaN without any)
 * @param updateMsP90 its nearest-rank 90th percentile (NaN without any)
 * @param stallMs the training stall the checkpoints cost the producer
 * @param path the paths the updates came by, {@code +}-joined
 * @param maxLateMs how far the producer's loop fell behind its pace at worst
 * @param losses every request's loss (mean over the replicas), in request order
 * @param changes the changes the online policy detected (none for the others)
 * @param seconds the wall time of the run, processes included
 */
public record PolicyOutcome(
        DemoPolicy policy,
        Schedule schedule,
        double predictedCil,
        double tLoadSeconds,
        int checkpoints,
        long[] publishedIterations,
        double[] cils,
        int requests,
        double accuracy,
        int swaps,
        double updateMsMean,
        double updateMsP90,
        double stallMs,
        String path,
        double maxLateMs,
        double[] losses,
        long[] changes,
        double seconds) {
    /** The outcome from the two processes' results. */
    static PolicyOutcome of(
            DemoPolicy policy,
            Schedule schedule,
            double predictedCil,
            double tLoadSeconds,
            ProducerResult producer,
            ConsumerResult consumer,
            double seconds) {
        int requests = consumer.requests();
        List<Double> latencies = new ArrayList<>();
        LinkedHashSet<String> paths = new LinkedHashSet<>();
        // The first update is the warm-up model, loaded before the clock starts (its version is 1, or the clock
        // when the producer hosts the broker on a fixed port: docs/architecture.md#versions).
        long warmup =
                consumer.updates().isEmpty() ? 0 : consumer.updates().getFirst().version();
        for (Update u : consumer.updates()) {
            paths.add(u.path());
            if (u.version() > warmup) {
                latencies.add(u.latencyMs());
            }
        }
        double mean = latencies.isEmpty()
                ? Double.NaN
                : latencies.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
        double p90 = latencies.isEmpty() ? Double.NaN : percentile(latencies, 0.9);
        double answers = (double) requests * consumer.cils().length;
        return new PolicyOutcome(
                policy,
                schedule,
                predictedCil,
                tLoadSeconds,
                producer.checkpoints(),
                producer.iterations(),
                consumer.cils(),
                requests,
                answers == 0 ? Double.NaN : consumer.correct() / answers,
                latencies.size(),
                mean,
                p90,
                producer.stallMs(),
                String.join("+", paths),
                producer.maxLateMs(),
                consumer.losses(),
                producer.changes(),
                seconds);
    }

    /** The policy's name, as the table and the JSON show it. */
    public String name() {
        return policy.displayName();
    }

    /** The measured CIL, the mean over the replicas. */
    public double cil() {
        return mean(cils);
    }

    /** The sample standard deviation of the replicas' CILs (0 with one replica): the request noise. */
    public double cilSpread() {
        return sd(cils);
    }

    /**
     * This policy's CIL relative to {@code other}'s on the same replicas: {@code {mean, sd}} over the replicas of
     * {@code cil_r / other_r - 1}. Pairing by replica takes out most of the request noise, so a mean within about two
     * sd of 0 is no difference.
     */
    public double[] relativeTo(PolicyOutcome other) {
        int n = Math.min(cils.length, other.cils.length);
        double[] r = new double[n];
        for (int i = 0; i < n; i++) {
            r[i] = cils[i] / other.cils[i] - 1;
        }
        return new double[] {mean(r), sd(r)};
    }

    /** The nearest-rank percentile {@code q} of {@code values}. */
    static double percentile(List<Double> values, double q) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int rank = (int) Math.ceil(q * v.length);
        return v[Math.max(0, Math.min(v.length - 1, rank - 1))];
    }

    private static double mean(double[] v) {
        double s = 0;
        for (double x : v) {
            s += x;
        }
        return v.length == 0 ? Double.NaN : s / v.length;
    }

    private static double sd(double[] v) {
        if (v.length < 2) {
            return 0;
        }
        double m = mean(v);
        double s = 0;
        for (double x : v) {
            s += (x - m) * (x - m);
        }
        return Math.sqrt(s / (v.length - 1));
    }
}
