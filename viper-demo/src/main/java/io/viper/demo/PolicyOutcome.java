package io.viper.demo;

import io.viper.demo.internal.DemoEvents.ConsumerResult;
import io.viper.demo.internal.DemoEvents.ProducerResult;
import io.viper.demo.internal.DemoEvents.Update;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import io.viper.scheduler.Schedule;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * What one policy's run measured.
 *
 * @param policy the policy
 * @param schedule what the scheduler planned for it, with the predicted CIL
 * @param checkpoints the checkpoints the producer published
 * @param publishedIterations their iterations
 * @param cil the measured CIL: the sum of the served requests' losses
 * @param requests the requests served
 * @param accuracy the share answered right (NaN without requests)
 * @param swaps the updates after the warm-up model that reached the consumer
 * @param updateMsMean their mean latency from publish to swap (NaN without any)
 * @param updateMsP90 its nearest-rank 90th percentile (NaN without any)
 * @param stallMs the training stall the checkpoints cost the producer
 * @param path the paths the updates came by, {@code +}-joined
 * @param maxLateMs how far the producer's loop fell behind its pace at worst
 * @param losses every request's loss, in request order
 * @param seconds the wall time of the run, processes included
 */
public record PolicyOutcome(Algorithm policy, Schedule schedule, int checkpoints, long[] publishedIterations, double cil,
                            int requests, double accuracy, int swaps, double updateMsMean, double updateMsP90, double stallMs,
                            String path, double maxLateMs, double[] losses, double seconds) {
    /** The outcome from the two processes' results. */
    static PolicyOutcome of(Algorithm policy, Schedule schedule, ProducerResult producer, ConsumerResult consumer, double seconds) {
        int requests = consumer.requests();
        List<Double> latencies = new ArrayList<>();
        LinkedHashSet<String> paths = new LinkedHashSet<>();
        // The first update is the warm-up model, loaded before the clock starts (its version is 1, or the clock
        // when the producer hosts the broker on a fixed port: docs/architecture.md#versions).
        long warmup = consumer.updates().isEmpty() ? 0 : consumer.updates().getFirst().version();
        for (Update u : consumer.updates()) {
            paths.add(u.path());
            if (u.version() > warmup) {
                latencies.add(u.latencyMs());
            }
        }
        double mean = latencies.isEmpty() ? Double.NaN : latencies.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
        double p90 = latencies.isEmpty() ? Double.NaN : percentile(latencies, 0.9);
        return new PolicyOutcome(policy, schedule, producer.checkpoints(), producer.iterations(), consumer.cil(), requests,
                requests == 0 ? Double.NaN : (double) consumer.correct() / requests, latencies.size(), mean, p90,
                producer.stallMs(), String.join("+", paths), producer.maxLateMs(), consumer.losses(), seconds);
    }

    /** The policy's name, as the table and the JSON show it. */
    public String name() {
        return policy.displayName();
    }

    /** The nearest-rank percentile {@code q} of {@code values}. */
    static double percentile(List<Double> values, double q) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int rank = (int) Math.ceil(q * v.length);
        return v[Math.max(0, Math.min(v.length - 1, rank - 1))];
    }
}
