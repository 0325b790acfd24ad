package io.viper.examples.digits;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Measures the demo workload and prints a plain-text report: time per training iteration, the
 * training-loss curve, and how much staleness costs (the expected loss and accuracy at a position of
 * a model published some iterations earlier).
 *
 * <p>Usage: {@code DigitsWorkloadReport [iterations [seed]]} (defaults 3000 and 42). Runs on the
 * calling thread; takes a few seconds.
 */
public final class DigitsWorkloadReport {
    private DigitsWorkloadReport() {}

    public static void main(String[] args) {
        long iterations = 3000;
        long seed = 42;
        try {
            if (args.length > 0) {
                iterations = Long.parseLong(args[0]);
            }
            if (args.length > 1) {
                seed = Long.parseLong(args[1]);
            }
            if (args.length > 2 || iterations < 100) {
                throw new NumberFormatException();
            }
        } catch (NumberFormatException e) {
            System.err.println("usage: DigitsWorkloadReport [iterations >= 100 [seed]]");
            System.exit(2);
            return;
        }
        report(iterations, seed, System.out);
    }

    /** Runs the measurements and prints them to {@code out}. */
    public static void report(long iterations, long seed, PrintStream out) {
        // timing, after a warm-up run on another seed so that the JIT has compiled the kernels
        Trainer warm = Trainer.defaults(iterations, seed + 1);
        for (int i = 0; i < 2000; i++) {
            warm.step();
        }
        Trainer trainer = Trainer.defaults(iterations, seed);
        ContinualDigitsStream stream = trainer.stream();
        int every = (int) Math.max(1, iterations / 30);
        List<InferenceModel> snapshots = new ArrayList<>(); // snapshots[k] = model after k*every iterations
        snapshots.add(trainer.snapshot());
        double[] losses = new double[(int) iterations];
        long trainNanos = 0;
        for (int i = 0; i < iterations; i++) {
            long t0 = System.nanoTime();
            losses[i] = trainer.step();
            trainNanos += System.nanoTime() - t0;
            if (trainer.iteration() % every == 0) {
                snapshots.add(trainer.snapshot());
            }
        }
        out.printf(Locale.ROOT, "workload: %s, batch %d, horizon %d, seed %d, %d parameters%n", trainer.model(),
                trainer.batchSize(), iterations, seed, trainer.model().parameterCount());
        out.printf(Locale.ROOT, "time per training iteration: %.1f us (mean over %d iterations, after JIT warm-up)%n",
                trainNanos / 1e3 / iterations, iterations);

        out.println();
        out.println("training loss (mean of the batch losses in each window of " + every + " iterations)");
        out.println("iteration  stage  rotation  train_loss");
        for (int k = 1; k * every <= iterations; k++) {
            double s = 0;
            for (int i = (k - 1) * every; i < k * every; i++) {
                s += losses[i];
            }
            long pos = (long) k * every;
            out.printf(Locale.ROOT, "%9d  %5d  %8.1f  %10.4f%n", pos, stream.stageAt(pos - 1), stream.rotationDegreesAt(pos - 1), s / every);
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
            out.printf(Locale.ROOT, "  model from iteration %5d: loss %.4f, accuracy %.1f%%%n", at, ev.meanLoss(), 100 * ev.accuracy());
        }
    }
}
