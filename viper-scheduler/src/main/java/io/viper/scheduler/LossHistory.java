package io.viper.scheduler;

import java.util.Arrays;

/**
 * The (iteration, loss) pairs a policy has been shown, in order, in arrays that grow as needed; ranges are handed out
 * as copies, so a refit on another thread never sees them change. Owned by one thread.
 */
final class LossHistory {
    private double[] xs = new double[1024];
    private double[] ys = new double[1024];
    private int size;

    /** Appends one pair; non-finite losses are skipped. */
    void add(long iteration, double loss) {
        if (!Double.isFinite(loss)) {
            return;
        }
        if (size == xs.length) {
            xs = Arrays.copyOf(xs, size * 2);
            ys = Arrays.copyOf(ys, size * 2);
        }
        xs[size] = iteration;
        ys[size] = loss;
        size++;
    }

    /** How many pairs it holds. */
    int size() {
        return size;
    }

    /** The iteration of pair {@code i}. */
    double iteration(int i) {
        return xs[i];
    }

    /** A copy of the iterations of pairs {@code from..to-1}. */
    double[] iterations(int from, int to) {
        return Arrays.copyOfRange(xs, from, to);
    }

    /** A copy of the losses of pairs {@code from..to-1}. */
    double[] losses(int from, int to) {
        return Arrays.copyOfRange(ys, from, to);
    }
}
