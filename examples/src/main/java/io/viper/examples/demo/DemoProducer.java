package io.viper.examples.demo;

import io.viper.CheckpointPolicy;
import io.viper.PublishHandle;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.examples.digits.Mlp;
import io.viper.examples.digits.Trainer;
import io.viper.tensor.Checkpoint;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.StringJoiner;
import java.util.concurrent.TimeUnit;

/**
 * The demo's training job: one process that trains the digits network on the continual stream and
 * publishes checkpoints through Viper at the iterations it is given, paced by a shared clock.
 *
 * <ol>
 *   <li>Trains the deterministic warm-up (iterations 1..s) as fast as it can, opens Viper (hosting
 *       the embedded broker unless told otherwise), publishes the warm-up model as version 1, and
 *       prints {@code {"event":"ready","notifier":URI,...}}.</li>
 *   <li>On {@code start EPOCH_MS}, trains iterations s+1..e, iteration i due to finish at
 *       {@code start + (i - s) * pace} (it sleeps when ahead), calling
 *       {@link ViperProducer#step} after each with an {@link CheckpointPolicy#atIterations} policy.
 *       Prints {@code progress} lines, then one {@code result} line: the iterations published, the
 *       training stall they cost (measured around {@code step}), how late the loop ran.</li>
 *   <li>Keeps serving the staged checkpoints until {@code stop}, then closes.</li>
 * </ol>
 *
 * <p>Options (all required unless a default is given): {@code --iterations E --warmup S --seed N
 * --pace-us US --checkpoints i,j,...|none --notifier URI --transports URI,...|none [--pfs DIR]}.
 * Exit status 2 for a bad option, 1 for any other failure.
 */
public final class DemoProducer {
    /** The model name the demo publishes. */
    public static final String MODEL = "digits";
    private static final Set<String> OPTIONS = Set.of("iterations", "warmup", "seed", "pace-us", "checkpoints", "notifier", "transports", "pfs");

    private DemoProducer() {
    }

    /** Runs the demo's producer with the options above; exits with 0, 1 or 2. */
    public static void main(String[] args) {
        DemoArgs.runMain("DemoProducer", args, OPTIONS, java.util.List.of("notifier"), DemoProducer::run);
    }

    private static void run(DemoArgs a) throws Exception {
        long end = a.longValue("iterations", 2, 10_000_000);
        long warmup = a.longValue("warmup", 1, end - 1);
        long seed = a.longValue("seed", Long.MIN_VALUE, Long.MAX_VALUE);
        long paceNanos = TimeUnit.MICROSECONDS.toNanos(a.longValue("pace-us", 1, 10_000_000));
        long[] checkpoints = a.iterations("checkpoints");
        String transports = a.required("transports");
        DemoIo io = new DemoIo();

        Trainer trainer = Trainer.defaults(end, seed);
        Mlp model = trainer.model();
        double loss = Double.NaN;
        while (trainer.iteration() < warmup) {
            loss = trainer.step();
        }
        // Checkpoints may come every few milliseconds: keep the newest 16 staged (10 KB each) so that a
        // consumer still fetching one is not told it was withdrawn.
        Viper.Builder builder = Viper.builder().notifier(a.required("notifier"))
                .transports(transports.equals("none") ? new String[0] : transports.split(","))
                .config(ViperConfig.STAGING_VERSIONS.name(), "16");
        if (a.string("pfs", null) != null) {
            builder.pfsRoot(Path.of(a.string("pfs", null)));
        }
        // Lazily described: the parameters are copied only on the iterations that publish.
        Snapshot snapshot = sink -> Snapshot.ofFloats(model.parameters(), model.shapes()).describe(sink);
        try (Viper viper = builder.build();
             ViperProducer producer = viper.producer(MODEL, CheckpointPolicy.atIterations(checkpoints))) {
            PublishHandle first = producer.publish(snapshot, Map.of(Checkpoint.META_ITERATION, Long.toString(warmup),
                    Checkpoint.META_LOSS, Double.toString(loss)));
            first.announced().get(60, TimeUnit.SECONDS);
            io.emit("{\"event\":\"ready\",\"notifier\":" + DemoIo.str(viper.notifierUri().toString())
                    + ",\"version\":" + first.version() + ",\"bytes\":" + first.announced().get().totalBytes() + "}");

            long start = io.awaitStart();
            List<long[]> published = new ArrayList<>(); // {iteration, version, stall ns, publish time ns from start}
            long stallNanos = 0;
            long maxLateNanos = 0;
            long nextProgress = start;
            for (long i = warmup + 1; i <= end; i++) {
                long due = start + (i - warmup - 1) * paceNanos; // iteration i runs in [due, due + pace)
                DemoIo.sleepUntil(due);
                maxLateNanos = Math.max(maxLateNanos, System.nanoTime() - due);
                loss = trainer.step();
                long t0 = System.nanoTime();
                Optional<PublishHandle> h = producer.step(i, loss, snapshot);
                long t1 = System.nanoTime();
                if (h.isPresent()) {
                    stallNanos += t1 - t0;
                    published.add(new long[] {i, h.get().version(), t1 - t0, t0 - start});
                }
                if (t1 >= nextProgress || i == end) {
                    nextProgress = t1 + TimeUnit.MILLISECONDS.toNanos(100);
                    io.emit("{\"event\":\"progress\",\"iteration\":" + i + ",\"version\":" + producer.latestVersion()
                            + ",\"loss\":" + DemoIo.num(loss) + "}");
                }
            }
            producer.flush();
            StringJoiner its = new StringJoiner(",", "[", "]");
            StringJoiner vers = new StringJoiner(",", "[", "]");
            StringJoiner stalls = new StringJoiner(",", "[", "]");
            for (long[] p : published) {
                its.add(Long.toString(p[0]));
                vers.add(Long.toString(p[1]));
                stalls.add(DemoIo.num(p[2] / 1e6));
            }
            io.emit("{\"event\":\"result\",\"checkpoints\":" + published.size() + ",\"iterations\":" + its + ",\"versions\":" + vers
                    + ",\"stall_ms\":" + DemoIo.num(stallNanos / 1e6) + ",\"stalls_ms\":" + stalls
                    + ",\"max_late_ms\":" + DemoIo.num(maxLateNanos / 1e6) + "}");
            io.awaitStop();
        }
    }
}
