package io.viper.examples.demo;

import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.examples.digits.ContinualDigitsStream;
import io.viper.examples.digits.DigitClassifier;
import io.viper.examples.digits.InferenceModel;
import io.viper.tensor.Tensor;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;

/**
 * The demo's inference server: one process that follows the {@value DemoProducer#MODEL} model through
 * Viper and answers a fixed-rate stream of requests with whatever model it holds at that moment.
 *
 * <ol>
 *   <li>Subscribes, waits for version 1 (the warm-up model), prints {@code {"event":"ready"}}.</li>
 *   <li>On {@code start EPOCH_MS}: request k is due at {@code start + k / rate}; it is drawn from the
 *       stream at position {@code s + floor(k / rate / pace)} (the training iteration the shared clock
 *       says it is) with a generator seeded by (seed, k), so every run serves the same requests. Each
 *       request takes a lease on the model serving now ({@link ViperConsumer#current()}), is answered,
 *       and its real cross-entropy and correctness are recorded with the version that answered.</li>
 *   <li>Prints {@code progress} lines, then one {@code result} line: the CIL (sum of the request
 *       losses), the accuracy, every request's loss, and every model update Viper reported (version,
 *       latency from publish to swap, path).</li>
 * </ol>
 *
 * <p>Options: {@code --iterations E --warmup S --seed N --pace-us US --rate R --notifier URI
 * --paths ucx|tcp|file [--pfs DIR]}. Exit status 2 for a bad option, 1 for any other failure.
 */
public final class DemoConsumer {
    private static final Set<String> OPTIONS = Set.of("iterations", "warmup", "seed", "pace-us", "rate", "notifier", "paths", "pfs");

    private DemoConsumer() {
    }

    /** Runs the demo's consumer with the options above; exits with 0, 1 or 2. */
    public static void main(String[] args) {
        DemoArgs.runMain("DemoConsumer", args, OPTIONS, java.util.List.of("notifier", "paths"), DemoConsumer::run);
    }

    /** The model serving now, built once per version from a lease's tensors. */
    private record Served(long version, InferenceModel model) {
        static Served of(ModelLease lease) {
            Map<String, float[]> params = new LinkedHashMap<>();
            Map<String, long[]> shapes = new LinkedHashMap<>();
            for (Tensor t : lease.tensors()) {
                params.put(t.name(), t.toFloatArray());
                shapes.put(t.name(), t.shape());
            }
            return new Served(lease.version(), InferenceModel.fromParameters(params, shapes));
        }
    }

    private static void run(DemoArgs a) throws Exception {
        long end = a.longValue("iterations", 2, 10_000_000);
        long warmup = a.longValue("warmup", 1, end - 1);
        long seed = a.longValue("seed", Long.MIN_VALUE, Long.MAX_VALUE);
        long paceNanos = TimeUnit.MICROSECONDS.toNanos(a.longValue("pace-us", 1, 10_000_000));
        double rate = a.doubleValue("rate", 1e-3, 1e6);
        DemoIo io = new DemoIo();
        ContinualDigitsStream stream = new ContinualDigitsStream(ContinualDigitsStream.Config.defaults(end, seed));
        int requests = requestCount(end, warmup, paceNanos, rate);

        Viper.Builder builder = Viper.builder().notifier(a.required("notifier")).consumerPaths(a.required("paths").split(","));
        if (a.string("pfs", null) != null) {
            builder.pfsRoot(Path.of(a.string("pfs", null)));
        }
        List<ModelUpdate> updates = new ArrayList<>();
        try (Viper viper = builder.build(); ViperConsumer consumer = viper.consumer(DemoProducer.MODEL)) {
            consumer.onUpdate(u -> {
                synchronized (updates) {
                    updates.add(u);
                }
            });
            consumer.awaitVersion(1, Duration.ofSeconds(60));
            Served served;
            try (ModelLease lease = consumer.current()) {
                served = Served.of(lease);
            }
            // Compile the serving path before the clock starts: a cold JVM would be slow on the first requests.
            SplittableRandom warm = new SplittableRandom(seed);
            for (int i = 0; i < 3000; i++) {
                served.model().predictProba(stream.sampleRequest(warmup, warm).x());
            }
            io.emit("{\"event\":\"ready\",\"version\":" + served.version() + "}");

            long start = io.awaitStart();
            double[] losses = new double[requests];
            long[] versions = new long[requests];
            int correct = 0;
            double cil = 0;
            long nextProgress = start;
            double recent = 0;
            int recentN = 0;
            for (int k = 0; k < requests; k++) {
                long due = start + (long) (k * 1e9 / rate);
                DemoIo.sleepUntil(due);
                long position = requestPosition(warmup, k, rate, paceNanos);
                ContinualDigitsStream.Example request = stream.sampleRequest(Math.min(position, end), new SplittableRandom(mix(seed, k)));
                try (ModelLease lease = consumer.current()) {
                    if (lease.version() != served.version()) {
                        served = Served.of(lease);
                    }
                    float[] p = served.model().predictProba(request.x());
                    losses[k] = DigitClassifier.crossEntropy(p, request.label());
                    versions[k] = served.version();
                    if (DigitClassifier.argmax(p) == request.label()) {
                        correct++;
                    }
                }
                cil += losses[k];
                recent += losses[k];
                recentN++;
                long now = System.nanoTime();
                if (now >= nextProgress || k == requests - 1) {
                    nextProgress = now + TimeUnit.MILLISECONDS.toNanos(100);
                    io.emit("{\"event\":\"progress\",\"served\":" + (k + 1) + ",\"of\":" + requests + ",\"position\":" + position
                            + ",\"version\":" + served.version() + ",\"loss\":" + DemoIo.num(recent / recentN) + "}");
                    recent = 0;
                    recentN = 0;
                }
            }
            StringJoiner l = new StringJoiner(",", "[", "]");
            StringJoiner v = new StringJoiner(",", "[", "]");
            for (int k = 0; k < requests; k++) {
                l.add(DemoIo.num(losses[k]));
                v.add(Long.toString(versions[k]));
            }
            StringJoiner u = new StringJoiner(",", "[", "]");
            synchronized (updates) {
                for (ModelUpdate up : updates) {
                    u.add("{\"version\":" + up.version() + ",\"latency_ms\":" + DemoIo.num(up.latencyMs()) + ",\"path\":" + DemoIo.str(up.path()) + "}");
                }
            }
            io.emit("{\"event\":\"result\",\"requests\":" + requests + ",\"cil\":" + cil + ",\"correct\":" + correct
                    + ",\"losses\":" + l + ",\"versions\":" + v + ",\"updates\":" + u + "}");
        }
    }

    /**
     * How many requests a run serves: {@code floor((e - s) * pace * rate)}, one every {@code 1 / rate}
     * seconds while training runs from s to e.
     */
    public static int requestCount(long end, long warmup, long paceNanos, double rate) {
        double runSeconds = (end - warmup) * paceNanos / 1e9;
        return (int) Math.min(Integer.MAX_VALUE - 8, Math.floor(runSeconds * rate));
    }

    /** The stream position request {@code k} is drawn at: {@code s + floor(k / rate / pace)}. */
    public static long requestPosition(long warmup, long k, double rate, long paceNanos) {
        return warmup + (long) Math.floor(k / rate * 1e9 / paceNanos);
    }

    /** SplitMix64 over (seed, k): request k's own generator, the same in every run. */
    static long mix(long seed, long k) {
        long z = seed * 0x632BE59BD9B4E019L + 0x9E3779B97F4A7C15L * (k + 1);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
