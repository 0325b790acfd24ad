package io.viper.demo;

import io.viper.demo.internal.ChildProcess;
import io.viper.demo.internal.DemoEvents;
import io.viper.demo.internal.DemoEvents.ConsumerProgress;
import io.viper.demo.internal.DemoEvents.ConsumerReady;
import io.viper.demo.internal.DemoEvents.ConsumerResult;
import io.viper.demo.internal.DemoEvents.ProducerProgress;
import io.viper.demo.internal.DemoEvents.ProducerReady;
import io.viper.demo.internal.DemoEvents.ProducerResult;
import io.viper.demo.internal.ProcessOptions;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import io.viper.predictor.CostModel;
import io.viper.scheduler.CilSimulator;
import io.viper.scheduler.Schedule;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalDouble;

/**
 * Runs a demo: measures what an update costs ({@link TransferCalibration}), then runs each policy in two fresh JVMs, a
 * {@link DemoProducer} and a {@link DemoConsumer} on this process's class path, connected only through Viper, started
 * on one shared clock; reports progress on a {@link StatusLine}. Before each run it plans ({@link DemoPlan#of}) with
 * {@code t_s} from the calibration and, as {@code t_load}, the update latency the runs before measured (the
 * calibration's before any did), so that the minimum spacing of {@code online}, the {@code t_load} of the scheduler and
 * the arrival times {@code hindsight} assumes are measured ones; {@code hindsight} is chosen ({@link Hindsight#choose})
 * when its turn comes.
 *
 * <p>One thread runs a demo; the processes' logs go to a temporary directory, deleted after a successful run unless
 * asked to keep them, and kept (and named in the error) after a failure.
 */
public final class DemoRunner {
    private static final Duration START_LIMIT = Duration.ofMinutes(2);
    private static final Duration EXIT_LIMIT = Duration.ofSeconds(30);
    /** A run may take this much longer than its paced training before it counts as hung. */
    private static final Duration RUN_SLACK = Duration.ofMinutes(2);

    private final DemoSettings s;
    private final StatusLine status;

    /** A runner for {@code settings}, reporting on {@code status}. */
    public DemoRunner(DemoSettings settings, StatusLine status) {
        this.s = settings;
        this.status = status;
    }

    /**
     * Plans and runs every policy.
     *
     * @param keepLogs whether to keep the processes' logs after a successful run
     * @throws ViperException when a process fails (reason INTERNAL) or does not finish in time (TIMEOUT)
     */
    public DemoResult run(boolean keepLogs) throws Exception {
        long t0 = System.nanoTime();
        status.line(String.format(
                Locale.ROOT,
                "demo: %s workload, %d iterations (warm-up %d) at %s each, %.0f requests/s x %d replicas, "
                        + "transport %s, policies %s",
                s.workload().displayName(),
                s.end(),
                s.warmup(),
                DemoReport.duration(s.paceNanos()),
                s.rate(),
                s.replicas(),
                s.transport().displayName(),
                String.join(
                        ",", s.policies().stream().map(DemoPolicy::displayName).toList())));
        Path work = Files.createTempDirectory("viper-demo");
        status.live("measuring one update of the model over " + s.transport().displayName()
                + " (t_s and t_load of the plan)...");
        CostModel costs = TransferCalibration.measure(s.transport(), DemoPlan.modelBytes(s), work);
        DemoPlan plan = DemoPlan.of(s, costs);
        status.line(String.format(
                Locale.ROOT,
                "measured over %s: t_s %.3f ms, t_load %.3f ms (mean of %d updates after %d to warm up)",
                s.transport().displayName(),
                plan.input().tSave() * 1e3,
                plan.input().tLoad() * 1e3,
                TransferCalibration.MEASURED,
                TransferCalibration.WARMUP));
        List<PolicyOutcome> outcomes = new ArrayList<>();
        for (int i = 0; i < s.policies().size(); i++) {
            OptionalDouble latency = measuredLatency(outcomes);
            if (latency.isPresent() && latency.getAsDouble() != plan.input().tLoad()) {
                plan = DemoPlan.of(s, costs, latency);
            }
            PolicyOutcome o = runPolicy(plan, s.policies().get(i), i, work);
            outcomes.add(o);
            status.line(String.format(
                    Locale.ROOT,
                    "  %-9s %4d checkpoints  CIL %9.2f +- %.2f (predicted %9.2f)  accuracy %5.1f%%  (%.1f s)",
                    o.name(),
                    o.checkpoints(),
                    o.cil(),
                    o.cilSpread(),
                    o.predictedCil(),
                    100 * o.accuracy(),
                    o.seconds()));
        }
        if (!keepLogs) {
            deleteQuietly(work);
        }
        return new DemoResult(
                s, plan, outcomes, (System.nanoTime() - t0) / 1e9, keepLogs ? Optional.of(work) : Optional.empty());
    }

    /**
     * The update latency the runs so far measured, in seconds: the 90th percentile of each run's updates, weighted by
     * their number (a checkpoint sooner than most updates arrive is wasted); empty before any.
     */
    static OptionalDouble measuredLatency(List<PolicyOutcome> outcomes) {
        double sum = 0;
        int n = 0;
        for (PolicyOutcome o : outcomes) {
            if (o.swaps() > 0 && Double.isFinite(o.updateMsP90())) {
                sum += o.updateMsP90() * o.swaps();
                n += o.swaps();
            }
        }
        return n == 0 ? OptionalDouble.empty() : OptionalDouble.of(sum / n / 1000);
    }

    private PolicyOutcome runPolicy(DemoPlan plan, DemoPolicy policy, int index, Path work) throws Exception {
        String name = policy.displayName();
        String tag =
                String.format(Locale.ROOT, "[%d/%d %s]", index + 1, s.policies().size(), name);
        Schedule schedule;
        double predicted;
        if (policy == DemoPolicy.HINDSIGHT) {
            status.live(tag + " choosing the best schedule from the recorded run...");
            Hindsight h = Hindsight.choose(s, plan, plan.input().tLoad());
            schedule = new CilSimulator(plan.input())
                    .schedule(
                            name,
                            h.checkpoints(),
                            String.format(
                                    Locale.ROOT,
                                    "chosen on %d other request replicas, versions every %d iterations, %.1f ms"
                                            + " latency",
                                    Hindsight.SELECTION_REPLICAS,
                                    h.grid(),
                                    h.latencySeconds() * 1e3));
            predicted = h.selectedCil();
        } else {
            schedule = plan.schedules().get(policy);
            predicted = schedule.cil();
        }
        long t0 = System.nanoTime();
        Path dir = Files.createDirectories(work.resolve(name));
        // C1 only, with low thresholds: a run publishes about 200 checkpoints, and Viper's data path
        // should be compiled after the first few of them rather than interpreted for most of the run.
        List<String> jvm = List.of(
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-XX:Tier3InvocationThreshold=10",
                "-XX:Tier3MinInvocationThreshold=5",
                "-XX:Tier3CompileThreshold=50",
                "-XX:Tier3BackEdgeThreshold=2000",
                "-Djava.util.logging.config.file=" + writeLogging(dir));
        Optional<Path> pfs = s.transport() == DemoTransport.PFS
                ? Optional.of(Files.createDirectories(dir.resolve("pfs")))
                : Optional.empty();
        long paceMicros = Math.max(1, s.paceNanos() / 1000);

        ProcessOptions.Run run = new ProcessOptions.Run(
                s.end(), s.warmup(), s.seed(), paceMicros, s.notifier(), pfs, s.workload(), s.transport());
        Optional<ProcessOptions.Online> online = policy.followsItsPlan()
                ? Optional.empty()
                : Optional.of(new ProcessOptions.Online(
                        plan.online(),
                        plan.input().tSave(),
                        plan.input().tLoad(),
                        plan.input().tInfer()));
        List<String> pcmd = ChildJvm.command(
                jvm,
                DemoProducer.class.getName(),
                ProcessOptions.args(new ProcessOptions.Producer(
                        run,
                        policy.followsItsPlan() ? schedule.checkpoints() : new long[0],
                        s.transport().producerTransports(),
                        online)));
        // both processes start together; the consumer learns the producer's notifier once it exists
        List<String> ccmd = ChildJvm.command(
                jvm,
                DemoConsumer.class.getName(),
                ProcessOptions.args(new ProcessOptions.Consumer(
                        new ProcessOptions.Run(
                                s.end(),
                                s.warmup(),
                                s.seed(),
                                paceMicros,
                                ProcessOptions.NOTIFIER_FROM_DRIVER,
                                pfs,
                                s.workload(),
                                s.transport()),
                        s.rate(),
                        s.transport().consumerPaths(),
                        s.replicas())));
        status.live(String.format(
                Locale.ROOT, "%s starting the producer (warm-up %d iterations) and the consumer...", tag, s.warmup()));
        try (ChildProcess<ProducerReady, ProducerProgress, ProducerResult> producer =
                        ChildProcess.start("producer", name, pcmd, dir.resolve("producer.log"), DemoEvents.PRODUCER);
                ChildProcess<ConsumerReady, ConsumerProgress, ConsumerResult> consumer =
                        ChildProcess.start("consumer", name, ccmd, dir.resolve("consumer.log"), DemoEvents.CONSUMER)) {
            ProducerReady ready = producer.awaitReady(START_LIMIT);
            consumer.send(DemoEvents.notifier(ready.notifier()));
            consumer.awaitReady(START_LIMIT);
            long start = System.currentTimeMillis() + 300;
            producer.send(DemoEvents.start(start));
            consumer.send(DemoEvents.start(start));
            Duration limit = Duration.ofMillis((long) (s.runSeconds() * 1000) + RUN_SLACK.toMillis());
            long deadline = System.nanoTime() + limit.toNanos();
            while (!(producer.finished() && consumer.finished())) {
                producer.checkAlive();
                consumer.checkAlive();
                if (System.nanoTime() > deadline) {
                    throw new ViperTimeoutException("demo: policy " + name + " did not finish within "
                            + limit.toSeconds() + " s (logs in " + dir + ")");
                }
                status.live(progress(tag, producer.progress(), consumer.progress()));
                Thread.sleep(200);
            }
            producer.send(DemoEvents.STOP);
            producer.finish(EXIT_LIMIT);
            consumer.finish(EXIT_LIMIT);
            status.clear();
            ProducerResult pr = producer.result();
            return PolicyOutcome.of(
                    policy,
                    schedule,
                    policy.followsItsPlan() ? predicted : pr.predictedCil(),
                    plan.input().tLoad(),
                    pr,
                    consumer.result(),
                    (System.nanoTime() - t0) / 1e9);
        }
    }

    private String progress(String tag, ProducerProgress p, ConsumerProgress c) {
        StringBuilder sb = new StringBuilder(tag);
        if (p == null && c == null) {
            sb.append(" both processes ready, starting the clock...");
        }
        if (p != null) {
            sb.append(String.format(
                    Locale.ROOT,
                    " iteration %d/%d, published v%d, train loss %.3f",
                    p.iteration(),
                    s.end(),
                    p.version(),
                    p.loss()));
        }
        if (c != null) {
            sb.append(String.format(
                    Locale.ROOT, " | served %d/%d with v%d, loss %.3f", c.served(), c.of(), c.version(), c.loss()));
        }
        return sb.toString();
    }

    /** The processes log Viper at INFO and everything else at WARNING, into their stderr log file. */
    private static Path writeLogging(Path dir) throws IOException {
        Path f = dir.resolve("logging.properties");
        Files.writeString(
                f,
                String.join(
                        "\n",
                        "handlers=java.util.logging.ConsoleHandler",
                        ".level=WARNING",
                        "io.viper.level=INFO",
                        "smile.level=WARNING",
                        "java.util.logging.ConsoleHandler.level=ALL",
                        "java.util.logging.SimpleFormatter.format=%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n",
                        ""));
        return f;
    }

    /** Removes a temporary directory and what is in it, as far as it can. */
    static void deleteQuietly(Path dir) {
        try (var walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory; the OS cleans it eventually
        }
    }
}
