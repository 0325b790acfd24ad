package io.viper.demo;

import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.demo.digits.ContinualDigitsStream;
import io.viper.demo.digits.DigitClassifier;
import io.viper.demo.digits.InferenceModel;
import io.viper.demo.digits.Mlp;
import io.viper.demo.internal.ChildIo;
import io.viper.demo.internal.DemoArgs;
import io.viper.demo.internal.DemoEvents;
import io.viper.demo.internal.DemoEvents.ConsumerProgress;
import io.viper.demo.internal.DemoEvents.ConsumerReady;
import io.viper.demo.internal.DemoEvents.ConsumerResult;
import io.viper.demo.internal.ProcessOptions;
import io.viper.spi.Providers;
import io.viper.spi.TransportProvider;
import io.viper.tensor.Tensor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The demo's inference server: one process that follows the {@value DemoProducer#MODEL} model through Viper and answers
 * a fixed-rate stream of requests with whatever model it holds at that moment.
 *
 * <ol>
 *   <li>Warms its serving path up with an untrained model of the same shape, reads the notifier from the driver when
 *       told to ({@code --notifier -}: the driver starts it beside the producer, before the producer's notifier
 *       exists), subscribes, waits for version 1 (the warm-up model), reports {@code ready}.
 *   <li>On {@code start EPOCH_MS}: request k is due at {@code start + k / rate}; it is drawn from the stream at
 *       position {@code s + floor(k / rate / pace)} (the training iteration the shared clock says it is) once per
 *       replica, each replica with its own generator seeded by (seed, replica, k) ({@link Requests}), so every run
 *       serves the same requests. Each request takes a lease on the model serving now
 *       ({@link ViperConsumer#current()}); that model answers every replica's request, and their real cross-entropy and
 *       correctness are recorded with the version that answered.
 *   <li>Reports {@code progress}, then one {@code result}: each replica's CIL (the sum of its request losses), the
 *       accuracy over all replicas, every request's loss (mean over the replicas), and every model update Viper
 *       reported (version, latency from publish to swap, path).
 * </ol>
 *
 * <p>Options: {@code --iterations E --warmup S --seed N --pace-us US --workload stages|stationary|drift --rate R
 * --replicas R --notifier URI --paths ucx|tcp|file [--pfs DIR]}. Events go to standard output and commands come from
 * standard input as {@code DemoEvents} says. Exit status 2 for a bad option, 1 for any other failure.
 */
public final class DemoConsumer {
    private DemoConsumer() {}

    /** Runs the demo's consumer with the options above; exits with 0, 1 or 2. */
    public static void main(String[] args) {
        DemoArgs.runMain("DemoConsumer", () -> ProcessOptions.consumer(args), DemoConsumer::run);
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

    private static void run(ProcessOptions.Consumer options) throws Exception {
        ProcessOptions.Run o = options.run();
        long end = o.end();
        long warmup = o.warmup();
        long seed = o.seed();
        long paceNanos = TimeUnit.MICROSECONDS.toNanos(o.paceMicros());
        double rate = options.rate();
        ChildIo io = new ChildIo(DemoEvents.CONSUMER);
        int replicas = options.replicas();
        ContinualDigitsStream stream = o.workload().stream(end, seed);
        int requests = Requests.count(end, warmup, paceNanos, rate);

        // Compile the serving path before the clock starts (a cold JVM would be slow on the first requests),
        // with a model of the same shape, while the producer starts up beside this process.
        Mlp sameShape = new Mlp(Mlp.Config.defaults(seed));
        InferenceModel untrained = sameShape.snapshot();
        SplittableRandom warm = new SplittableRandom(seed);
        for (int i = 0; i < 3000; i++) {
            untrained.predictProba(stream.sampleRequest(warmup, warm).x());
        }
        // load the transports (and their native libraries) and compile the data path while the producer
        // is not ready yet: the run uses it a few dozen times, too few for the JIT to get to it otherwise
        Providers.transports().forEach(TransportProvider::unavailableReason);
        Providers.gpuUnavailableReason();
        TransferCalibration.warmUp(
                o.transport(),
                Snapshot.ofFloats(sameShape.parameters(), sameShape.shapes()),
                TransferCalibration.PROCESS_WARMUP);
        String notifier = o.notifier().equals(ProcessOptions.NOTIFIER_FROM_DRIVER) ? io.awaitNotifier() : o.notifier();
        Viper.Builder builder =
                Viper.builder().notifier(notifier).consumerPaths(options.paths().toArray(String[]::new));
        o.pfs().ifPresent(builder::pfsRoot);
        List<ModelUpdate> updates = new ArrayList<>();
        try (Viper viper = builder.build();
                ViperConsumer consumer = viper.consumer(DemoProducer.MODEL)) {
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
            io.emit(new ConsumerReady(served.version()));

            long start = io.awaitStart();
            double[] losses = new double[requests];
            long[] versions = new long[requests];
            double[] cils = new double[replicas];
            int correct = 0;
            long nextProgress = start;
            double recent = 0;
            int recentN = 0;
            for (int k = 0; k < requests; k++) {
                long due = start + (long) (k * 1e9 / rate);
                ChildIo.sleepUntil(due);
                long position = Requests.position(warmup, k, rate, paceNanos);
                try (ModelLease lease = consumer.current()) {
                    if (lease.version() != served.version()) {
                        served = Served.of(lease);
                    }
                    double sum = 0;
                    for (int r = 0; r < replicas; r++) {
                        ContinualDigitsStream.Example request =
                                stream.sampleRequest(Math.min(position, end), Requests.generator(seed, r, k));
                        float[] p = served.model().predictProba(request.x());
                        double loss = DigitClassifier.crossEntropy(p, request.label());
                        cils[r] += loss;
                        sum += loss;
                        if (DigitClassifier.argmax(p) == request.label()) {
                            correct++;
                        }
                    }
                    losses[k] = sum / replicas;
                    versions[k] = served.version();
                }
                recent += losses[k];
                recentN++;
                long now = System.nanoTime();
                if (now >= nextProgress || k == requests - 1) {
                    nextProgress = now + TimeUnit.MILLISECONDS.toNanos(100);
                    io.emit(new ConsumerProgress(k + 1, requests, position, served.version(), recent / recentN));
                    recent = 0;
                    recentN = 0;
                }
            }
            List<DemoEvents.Update> u = new ArrayList<>();
            synchronized (updates) {
                for (ModelUpdate up : updates) {
                    u.add(new DemoEvents.Update(up.version(), up.latencyMs(), up.path()));
                }
            }
            io.emit(new ConsumerResult(requests, cils, correct, losses, versions, u));
        }
    }
}
