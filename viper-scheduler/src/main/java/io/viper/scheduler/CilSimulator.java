package io.viper.scheduler;

import io.viper.errors.ViperConfigException;

/**
 * Computes the cumulative inference loss (CIL) of a checkpoint schedule, following Viper's
 * definition with request counts kept as real numbers.
 *
 * <p>With checkpoints {@code c_1 < ... < c_K} in {@code s+1..e} and {@code c_0 = s}, interval k
 * serves {@code n_k = ((c_k - c_{k-1}) * t_train + t_s + (k == 1 ? t_load : 0)) / t_infer}
 * requests with loss {@code L(c_{k-1})}; once the N requests are used up, later intervals serve
 * none (the last one that serves is capped). The requests left after {@code c_K} are served with
 * {@code L(c_K)}:
 * <pre>CIL = sum_k L(c_{k-1}) * n_k + L(c_K) * (N - sum_k n_k)</pre>
 * and the training overhead is {@code K * t_s}.
 *
 * <p>The losses {@code L(s..e)} are evaluated once, at construction. Instances are immutable.
 */
public final class CilSimulator {
    private final ScheduleInput in;
    private final double[] loss;

    /**
     * Evaluates the curve over {@code s..e}.
     *
     * @throws ViperConfigException if the curve is not finite at some iteration of the range
     */
    public CilSimulator(ScheduleInput in) {
        this.in = in;
        int m = in.span();
        loss = new double[m + 1];
        for (int j = 0; j <= m; j++) {
            double v = in.curve().value(in.warmup() + j);
            if (!Double.isFinite(v)) {
                throw new ViperConfigException("schedule: curve " + in.curve().describe() + " is not finite at iteration "
                        + (in.warmup() + j));
            }
            loss[j] = v;
        }
    }

    /** The input this simulator was built for. */
    public ScheduleInput input() {
        return in;
    }

    /** The predicted loss at {@code iteration} (within {@code s..e}). */
    public double loss(long iteration) {
        return loss[index(iteration)];
    }

    /** The predicted losses of iterations {@code s..e}, index {@code i - s} (a copy). */
    public double[] losses() {
        return loss.clone();
    }

    /** Shared, not copied: for the schedulers in this package. */
    double[] lossesUnsafe() {
        return loss;
    }

    /**
     * The CIL of the schedule {@code checkpoints}.
     *
     * @throws ViperConfigException if the iterations are not strictly increasing within {@code s+1..e}
     */
    public double cil(long[] checkpoints) {
        long prev = in.warmup();
        for (long c : checkpoints) {
            if (c <= prev || c > in.end()) {
                throw new ViperConfigException("schedule: checkpoints must increase strictly within " + (in.warmup() + 1)
                        + ".." + in.end() + ", got " + c + " after " + prev);
            }
            prev = c;
        }
        double remaining = in.inferences();
        double total = 0;
        prev = in.warmup();
        for (int k = 0; k < checkpoints.length && remaining > 0; k++) {
            double n = requests(k + 1, checkpoints[k] - prev);
            double served = Math.min(n, remaining);
            total += loss[(int) (prev - in.warmup())] * served;
            remaining -= served;
            prev = checkpoints[k];
        }
        long last = checkpoints.length == 0 ? in.warmup() : checkpoints[checkpoints.length - 1];
        return total + loss[(int) (last - in.warmup())] * remaining;
    }

    /**
     * The CIL of the fixed-interval schedule {@code s+v, s+2v, ...} up to e, with the same
     * arithmetic as {@link #cil(long[])}; stops as soon as the requests are used up.
     */
    double cilEvery(int v) {
        int m = in.span();
        int count = m / v;
        double remaining = in.inferences();
        double total = 0;
        int prev = 0;
        int k = 0;
        for (; k < count && remaining > 0; k++) {
            double n = requests(k + 1, v);
            double served = Math.min(n, remaining);
            total += loss[prev] * served;
            remaining -= served;
            prev += v;
        }
        int last = count * v;
        return total + loss[last] * remaining;
    }

    /** Requests served by interval {@code k} (1-based) of {@code iterations} iterations, uncapped. */
    double requests(int k, long iterations) {
        return (iterations * in.tTrain() + in.tSave() + (k == 1 ? in.tLoad() : 0)) / in.tInfer();
    }

    /** The training overhead of {@code k} checkpoints, {@code k * t_s}. */
    public double overheadSeconds(int k) {
        return k * in.tSave();
    }

    /** A schedule record for {@code checkpoints}, with its CIL and overhead computed here. */
    public Schedule schedule(String algorithm, long[] checkpoints, String detail) {
        return new Schedule(algorithm, checkpoints, cil(checkpoints), overheadSeconds(checkpoints.length), detail);
    }

    private int index(long iteration) {
        if (iteration < in.warmup() || iteration > in.end()) {
            throw new ViperConfigException("schedule: iteration " + iteration + " is outside " + in.warmup() + ".." + in.end());
        }
        return (int) (iteration - in.warmup());
    }
}
