package io.viper.demo.digits;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Measures the demo workload and prints a plain-text report: time per training iteration, the training-loss curve, and
 * how much staleness costs (the expected loss and accuracy at a position of a model published some iterations earlier).
 *
 * <p>Usage: {@code DigitsWorkloadReport [iterations [seed [rotation-only]]]} (defaults 3000, 42, and the default
 * stream). {@code rotation-only} measures a gentler stream: all digits from the start, only the rotation drift. Runs on
 * the calling thread; takes a few seconds.
 */
public final class DigitsWorkloadReport {
    private DigitsWorkloadReport() {}

    public static void main(String[] args) {
        long iterations = 3000;
        long seed = 42;
        boolean rotationOnly = false;
        try {
            if (args.length > 0) {
                iterations = Long.parseLong(args[0]);
            }
            if (args.length > 1) {
                seed = Long.parseLong(args[1]);
            }
            if (args.length > 2) {
                if (!args[2].equals("rotation-only")) {
                    throw new NumberFormatException();
                }
                rotationOnly = true;
            }
            if (args.length > 3 || iterations < 100) {
                throw new NumberFormatException();
            }
        } catch (NumberFormatException e) {
            System.err.println("usage: DigitsWorkloadReport [iterations >= 100 [seed [rotation-only]]]");
            System.exit(2);
            return;
        }
        StreamConfig config = StreamConfig.defaults(iterations, seed);
        if (rotationOnly) {
            config = config.withStages(List.of(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
        }
        report(config, System.out);
    }

    /** Runs the measurements on a stream with {@code config} (horizon = iterations) and prints them. */
    public static void report(StreamConfig config, PrintStream out) {
        long iterations = config.horizon();
        long seed = config.seed();
        // timing, after a warm-up run on another seed so that the JIT has compiled the kernels
        Trainer warm = new Trainer(
                new ContinualDigitsStream(config.withSeed(seed + 1)),
                new Mlp(Mlp.Config.defaults(seed + 1)),
                Trainer.DEFAULT_BATCH_SIZE);
        for (int i = 0; i < 2000; i++) {
            warm.step();
        }
        Trainer trainer = new Trainer(
                new ContinualDigitsStream(config), new Mlp(Mlp.Config.defaults(seed)), Trainer.DEFAULT_BATCH_SIZE);
        ContinualDigitsStream stream = trainer.stream();
        int every = (int) Math.max(1, iterations / 30);
        List<InferenceModel> snapshots = new ArrayList<>(); // snapshots[k] = model after k*every iterations
        snapshots.add(trainer.snapshot());
        double[] losses = new double[(int) iterations];
        long trainNanos = 0;
        long blockNanos = 0;
        long bestBlock = Long.MAX_VALUE;
        final int block = 100;
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long cpu0 = threads.isCurrentThreadCpuTimeSupported() ? threads.getCurrentThreadCpuTime() : -1;
        long snapshotNanos = 0;
        for (int i = 0; i < iterations; i++) {
            long t0 = System.nanoTime();
            losses[i] = trainer.step();
            long dt = System.nanoTime() - t0;
            trainNanos += dt;
            blockNanos += dt;
            if ((i + 1) % block == 0) {
                bestBlock = Math.min(bestBlock, blockNanos);
                blockNanos = 0;
            }
            if (trainer.iteration() % every == 0) {
                long s0 = System.nanoTime();
                snapshots.add(trainer.snapshot());
                snapshotNanos += System.nanoTime() - s0;
            }
        }
        long cpuNanos = cpu0 < 0 ? -1 : threads.getCurrentThreadCpuTime() - cpu0 - snapshotNanos;
        out.printf(
                Locale.ROOT,
                "workload: %s, batch %d, horizon %d, seed %d, %d parameters, %d stages, rotation up to %.0f degrees%n",
                trainer.model(),
                trainer.batchSize(),
                iterations,
                seed,
                trainer.model().parameterCount(),
                stream.stageCount(),
                config.maxRotationDegrees());
        out.printf(
                Locale.ROOT,
                "time per training iteration (after JIT warm-up): mean %.1f us wall over %d iterations, "
                        + "best block of %d %.1f us wall, about %.1f us thread CPU%n",
                trainNanos / 1e3 / iterations,
                iterations,
                block,
                bestBlock / 1e3 / block,
                cpuNanos < 0 ? Double.NaN : cpuNanos / 1e3 / iterations);
        InferenceModel served = snapshots.getLast();
        float[] probe = stream.example(stream.requestIndices()[0], iterations).x();
        long i0 = System.nanoTime();
        int reps = 20_000;
        int sink = 0;
        for (int r = 0; r < reps; r++) {
            sink += served.predict(probe);
        }
        out.printf(
                Locale.ROOT,
                "time per inference request (InferenceModel.predict, one thread): %.2f us (checksum %d)%n",
                (System.nanoTime() - i0) / 1e3 / reps,
                sink % 10);

        out.println();
        out.println("training loss (mean of the batch losses in each window of " + every + " iterations)");
        out.println("iteration  stage  rotation  train_loss");
        for (int k = 1; k * ((long) every) <= iterations; k++) {
            double s = 0;
            for (int i = (k - 1) * every; i < k * every; i++) {
                s += losses[i];
            }
            long pos = (long) k * every;
            out.printf(
                    Locale.ROOT,
                    "%9d  %5d  %8.1f  %10.4f%n",
                    pos,
                    stream.stageAt(pos - 1),
                    stream.rotationDegreesAt(pos - 1),
                    s / every);
        }

        out.println();
        out.println("freshest model vs stale models on the requests at each position (expected loss / accuracy)");
        long[] lags = {0, every, 2L * every, 5L * every, iterations / 4, iterations / 2};
        StringBuilder header = new StringBuilder("position");
        for (long lag : lags) {
            header.append(String.format(Locale.ROOT, "  %17s", "stale " + lag));
        }
        out.println(header);
        double[] lossSum = new double[lags.length];
        double[] accSum = new double[lags.length];
        int rows = 0;
        for (int k = 1; k < snapshots.size(); k++) {
            long pos = (long) k * every;
            StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%8d", pos));
            for (int l = 0; l < lags.length; l++) {
                long from = Math.max(0, pos - lags[l]);
                InferenceModel m = snapshots.get((int) (from / every));
                ContinualDigitsStream.Evaluation ev = stream.evaluate(m, pos);
                lossSum[l] += ev.meanLoss();
                accSum[l] += ev.accuracy();
                line.append(String.format(Locale.ROOT, "  %8.4f / %5.1f%%", ev.meanLoss(), 100 * ev.accuracy()));
            }
            rows++;
            out.println(line);
        }
        StringBuilder mean = new StringBuilder("    mean");
        for (int l = 0; l < lags.length; l++) {
            mean.append(String.format(Locale.ROOT, "  %8.4f / %5.1f%%", lossSum[l] / rows, 100 * accSum[l] / rows));
        }
        out.println(mean);

        long late = iterations;
        out.println();
        out.println("on the requests at the end (position " + late + "):");
        for (long at : new long[] {iterations / 4, iterations / 2, 3 * iterations / 4, iterations}) {
            InferenceModel m = snapshots.get((int) (Math.min(at, (long) (snapshots.size() - 1) * every) / every));
            ContinualDigitsStream.Evaluation ev = stream.evaluate(m, late);
            out.printf(
                    Locale.ROOT,
                    "  model from iteration %5d: loss %.4f, accuracy %.1f%%%n",
                    at,
                    ev.meanLoss(),
                    100 * ev.accuracy());
        }
    }
}
