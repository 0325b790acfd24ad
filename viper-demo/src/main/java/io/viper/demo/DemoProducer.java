package io.viper.demo;

import io.viper.CheckpointPolicy;
import io.viper.PublishHandle;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.demo.digits.Mlp;
import io.viper.demo.digits.Trainer;
import io.viper.demo.internal.ChildIo;
import io.viper.demo.internal.DemoArgs;
import io.viper.demo.internal.DemoEvents;
import io.viper.demo.internal.DemoEvents.ProducerProgress;
import io.viper.demo.internal.DemoEvents.ProducerReady;
import io.viper.demo.internal.DemoEvents.ProducerResult;
import io.viper.demo.internal.ProcessOptions;
import io.viper.predictor.CurveFamily;
import io.viper.scheduler.OnlineCheckpointPolicy;
import io.viper.scheduler.OnlineReplanner;
import io.viper.scheduler.ScheduleInput;
import io.viper.tensor.Checkpoint;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The demo's training job: one process that trains the digits network on the continual stream and publishes checkpoints
 * through Viper at the iterations it is given, paced by a shared clock.
 *
 * <ol>
 *   <li>Trains the deterministic warm-up (iterations 1..s) as fast as it can, opens Viper (hosting the embedded broker
 *       unless told otherwise), publishes the warm-up model as version 1, and reports {@code ready} with the notifier's
 *       address.
 *   <li>On {@code start EPOCH_MS}, trains iterations s+1..e, iteration i due to finish at {@code start + (i - s) *
 *       pace} (it sleeps when ahead), calling {@link ViperProducer#step} after each with an
 *       {@link CheckpointPolicy#atIterations} policy, or with {@code --online} the {@link OnlineCheckpointPolicy},
 *       whose {@link ValidationProbe} scores the version it last published against the model being trained (its
 *       re-plans run on a thread of their own). Reports {@code progress}, then one {@code result}: the iterations
 *       published, the training stall they cost (measured around {@code step}), how late the loop ran, and for online
 *       the CIL its probes predict.
 *   <li>Keeps serving the staged checkpoints until {@code stop}, then closes.
 * </ol>
 *
 * <p>Options (all required unless a default is given): {@code --iterations E --warmup S --seed N --pace-us US
 * --workload stages|stationary|drift --checkpoints i,j,...|none --notifier URI --transports URI,...|none [--pfs DIR]
 * [--online budget=K,spacing=..,threshold=..,burst=..,gain=..,hold=..,refit=..,t_save=..,t_load=..,t_infer=..]}. Events
 * go to standard output and commands come from standard input as {@code DemoEvents} says. Exit status 2 for a bad
 * option, 1 for any other failure.
 */
public final class DemoProducer {
    /** The model name the demo publishes. */
    public static final String MODEL = "digits";

    private DemoProducer() {}

    /** Runs the demo's producer with the options above; exits with 0, 1 or 2. */
    public static void main(String[] args) {
        DemoArgs.runMain("DemoProducer", () -> ProcessOptions.producer(args), DemoProducer::run);
    }

    private static void run(ProcessOptions.Producer options) throws Exception {
        ProcessOptions.Run o = options.run();
        long end = o.end();
        long warmup = o.warmup();
        long paceNanos = TimeUnit.MICROSECONDS.toNanos(o.paceMicros());
        ChildIo io = new ChildIo(DemoEvents.PRODUCER);

        Trainer trainer = o.workload().trainer(end, o.seed());
        Mlp model = trainer.model();
        double loss = Double.NaN;
        while (trainer.iteration() < warmup) {
            loss = trainer.step();
        }
        // The run publishes a few dozen times, too few for the JIT to compile the data path on its own.
        TransferCalibration.warmUp(
                o.transport(),
                Snapshot.ofFloats(model.parameters(), model.shapes()),
                TransferCalibration.PROCESS_WARMUP);
        ValidationProbe probe = new ValidationProbe(trainer.stream(), model, trainer.snapshot(), o.seed());
        Optional<OnlineCheckpointPolicy> online = options.online()
                .map(on -> new OnlineCheckpointPolicy(
                        on.config(),
                        probe,
                        new OnlineReplanner(new ScheduleInput(
                                CurveFamily.LIN2.curve(0, 0),
                                warmup,
                                end,
                                1,
                                paceNanos / 1e9,
                                on.tSave(),
                                on.tLoad(),
                                on.tInfer()))));
        CheckpointPolicy policy =
                online.<CheckpointPolicy>map(p -> p).orElse(CheckpointPolicy.atIterations(options.checkpoints()));
        // Checkpoints may come every few milliseconds: keep the newest 16 staged (10 KB each) so that a
        // consumer still fetching one is not told it was withdrawn.
        Viper.Builder builder = Viper.builder()
                .notifier(o.notifier())
                .transports(options.transports().toArray(String[]::new))
                .config(ViperConfig.STAGING_VERSIONS.name(), "16")
                .config(ViperConfig.PRODUCER_INLINE_BYTES.name(), o.transport().inlineBytes());
        o.pfs().ifPresent(builder::pfsRoot);
        // Lazily described: the parameters are copied only on the iterations that publish.
        Snapshot snapshot =
                sink -> Snapshot.ofFloats(model.parameters(), model.shapes()).describe(sink);
        try (Viper viper = builder.build();
                ViperProducer producer = viper.producer(MODEL, policy)) {
            PublishHandle first = producer.publish(
                    snapshot,
                    Map.of(
                            Checkpoint.META_ITERATION,
                            Long.toString(warmup),
                            Checkpoint.META_LOSS,
                            Double.toString(loss)));
            first.announced().get(60, TimeUnit.SECONDS);
            io.emit(new ProducerReady(
                    viper.notifierUri().toString(),
                    first.version(),
                    first.announced().get().totalBytes()));

            long start = io.awaitStart();
            List<long[]> published = new ArrayList<>(); // {iteration, version, stall ns, publish time ns from start}
            long stallNanos = 0;
            long maxLateNanos = 0;
            long nextProgress = start;
            for (long i = warmup + 1; i <= end; i++) {
                long due = start + (i - warmup - 1) * paceNanos; // iteration i runs in [due, due + pace)
                ChildIo.sleepUntil(due);
                maxLateNanos = Math.max(maxLateNanos, System.nanoTime() - due);
                loss = trainer.step();
                long t0 = System.nanoTime();
                Optional<PublishHandle> h = producer.step(i, loss, snapshot);
                long t1 = System.nanoTime();
                if (h.isPresent()) {
                    stallNanos += t1 - t0;
                    published.add(new long[] {i, h.get().version(), t1 - t0, t0 - start});
                    probe.deployed(trainer.snapshot());
                }
                if (t1 >= nextProgress || i == end) {
                    nextProgress = t1 + TimeUnit.MILLISECONDS.toNanos(100);
                    io.emit(new ProducerProgress(i, producer.latestVersion(), loss));
                }
            }
            producer.flush();
            io.emit(new ProducerResult(
                    published.size(),
                    published.stream().mapToLong(p -> p[0]).toArray(),
                    published.stream().mapToLong(p -> p[1]).toArray(),
                    stallNanos / 1e6,
                    published.stream().mapToDouble(p -> p[2] / 1e6).toArray(),
                    maxLateNanos / 1e6,
                    online.map(OnlineCheckpointPolicy::servedLossEstimate).orElse(Double.NaN),
                    online.map(OnlineCheckpointPolicy::changes).orElse(new long[0])));
            io.awaitStop();
        }
    }
}
