package io.viper.demo.digits;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Trains the demo workload ({@link Trainer#defaults}) for N iterations and writes its training-loss log as CSV,
 * {@code iteration,loss}: one row per iteration, {@code iteration} counting completed iterations from 1, {@code loss}
 * the mean cross-entropy of that iteration's mini-batch. This is the input for fitting learning curves.
 *
 * <p>Usage: {@code LossLogExample [--iterations N] [--horizon H] [--seed S] [--batch B] [--hidden U] [--out FILE]}.
 * Defaults: 3000 iterations, horizon = iterations, seed 42, batch 32, 32 hidden units, CSV to standard output. A
 * summary line goes to standard error. A bad argument prints one line to standard error and exits with status 2.
 */
public final class LossLogExample {
    private LossLogExample() {}

    /** Parsed command line. */
    record Options(long iterations, long horizon, long seed, int batch, int hidden, Path out) {}

    public static void main(String[] args) {
        Options o;
        try {
            o = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("LossLogExample: " + e.getMessage());
            System.exit(2);
            return;
        }
        long t0 = System.nanoTime();
        double last;
        try {
            if (o.out() == null) {
                // Flushed, not closed: standard output stays open for the rest of the JVM.
                Writer w = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
                last = run(o, w);
                w.flush();
            } else {
                try (Writer w = Files.newBufferedWriter(o.out(), StandardCharsets.UTF_8)) {
                    last = run(o, w);
                }
            }
        } catch (IOException e) {
            System.err.println("LossLogExample: cannot write " + (o.out() == null ? "standard output" : o.out()) + ": "
                    + e.getMessage());
            System.exit(1);
            return;
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        System.err.printf(
                Locale.ROOT,
                "LossLogExample: %d iterations in %.2f s (%.1f us each), last loss %.4f%n",
                o.iterations(),
                seconds,
                seconds * 1e6 / o.iterations(),
                last);
    }

    /**
     * Trains as {@code o} says and writes the CSV to {@code out}.
     *
     * @return the last iteration's loss
     */
    static double run(Options o, Appendable out) throws IOException {
        ContinualDigitsStream stream = new ContinualDigitsStream(StreamConfig.defaults(o.horizon(), o.seed()));
        Trainer trainer =
                new Trainer(stream, new Mlp(Mlp.Config.defaults(o.seed()).withHidden(o.hidden())), o.batch());
        out.append("iteration,loss\n");
        double loss = Double.NaN;
        for (long i = 0; i < o.iterations(); i++) {
            loss = trainer.step();
            out.append(Long.toString(trainer.iteration()))
                    .append(',')
                    .append(String.format(Locale.ROOT, "%.6f", loss))
                    .append('\n');
        }
        return loss;
    }

    static Options parse(String[] args) {
        long iterations = 3000;
        Long horizon = null;
        long seed = 42;
        int batch = Trainer.DEFAULT_BATCH_SIZE;
        int hidden = 32;
        Path out = null;
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (flag.equals("-h") || flag.equals("--help")) {
                throw new IllegalArgumentException(
                        "usage: LossLogExample [--iterations N] [--horizon H] [--seed S] [--batch B] [--hidden U]"
                                + " [--out FILE]");
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("option " + flag + " needs a value");
            }
            String value = args[++i];
            switch (flag) {
                case "--iterations" -> iterations = parseLong(flag, value, 1, 10_000_000);
                case "--horizon" -> horizon = parseLong(flag, value, 1, Long.MAX_VALUE);
                case "--seed" -> seed = parseLong(flag, value, Long.MIN_VALUE, Long.MAX_VALUE);
                case "--batch" -> batch = (int) parseLong(flag, value, 1, 4096);
                case "--hidden" -> hidden = (int) parseLong(flag, value, 1, 4096);
                case "--out" -> out = Path.of(value);
                default ->
                    throw new IllegalArgumentException("unknown option " + flag
                            + " (expected --iterations, --horizon, --seed, --batch, --hidden, --out)");
            }
        }
        return new Options(iterations, horizon == null ? iterations : horizon, seed, batch, hidden, out);
    }

    private static long parseLong(String flag, String value, long min, long max) {
        long v;
        try {
            v = Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + ": '" + value + "' is not an integer");
        }
        if (v < min || v > max) {
            throw new IllegalArgumentException(flag + ": " + v + " is out of range " + min + ".." + max);
        }
        return v;
    }
}
