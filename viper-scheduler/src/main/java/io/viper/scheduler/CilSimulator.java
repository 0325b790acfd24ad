package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import java.util.Locale;

/**
 * Computes the cumulative inference loss (CIL) of a checkpoint schedule, following Viper's definition with request
 * counts kept as real numbers, under the input's {@link Objective}.
 *
 * <p>With checkpoints {@code c_1 < ... < c_K} in {@code s+1..e} and {@code c_0 = s}, interval k serves {@code n_k =
 * ((c_k - c_{k-1}) * t_train + t_s + (k == 1 ? t_load : 0)) / t_infer} requests with version {@code c_{k-1}}; once the
 * N requests are used up, later intervals serve none (the last one that serves is capped). The requests left after
 * {@code c_K} are served by {@code c_K}. Under Viper's objective a request served by version c costs {@code L(c)}:
 *
 * <pre>CIL = sum_k L(c_{k-1}) * n_k + L(c_K) * (N - sum_k n_k)</pre>
 *
 * and the training overhead is {@code K * t_s}.
 *
 * <p>Under the staleness-aware objective, request number {@code r} (counted from 0 as the run goes) is served at
 * iteration {@code p(r) = s + min(e - s, r * t_infer / t_train)} and costs {@code L(c) + rate * (p(r) - c)}. Summed
 * over an interval that is {@code (L(c) - rate * (c - s)) * n_k} plus a share of {@code rate * sum_r (p(r) - s)}, which
 * is the same for every schedule. So the CIL is Viper's formula over the <em>serving losses</em> {@code L(c) - rate *
 * (c - s)} ({@link #servingLossesUnsafe()}, what every algorithm here minimises) plus that constant, {@code rate *
 * integral_0^N min(e - s, r * t_infer / t_train) dr}. With a rate of 0 the serving losses are the curve and the
 * constant is 0: exactly Viper's CIL.
 *
 * <p>The losses {@code L(s..e)} are evaluated once, at construction. Instances are immutable.
 */
public final class CilSimulator {
    private final ScheduleInput in;
    private final double[] loss;
    private final double[] serving;
    private final double driftCost;

    /**
     * Evaluates the curve over {@code s..e}.
     *
     * @throws ViperConfigException if the curve is not finite at some iteration of the range, or the CIL of a schedule
     *     could pass the range of a double (losses near 1e308, or their product with N)
     */
    public CilSimulator(ScheduleInput in) {
        this.in = in;
        int m = in.span();
        double rate = in.staleness().ratePerIteration();
        loss = new double[m + 1];
        serving = new double[m + 1];
        double peak = 0;
        for (int j = 0; j <= m; j++) {
            double v = in.curve().value((double) (in.warmup() + j));
            if (!Double.isFinite(v)) {
                throw new ViperConfigException("schedule: curve " + in.curve().describe()
                        + " is not finite at iteration " + (in.warmup() + j));
            }
            loss[j] = v;
            serving[j] = v - rate * j;
            peak = Math.max(peak, Math.abs(serving[j]));
        }
        driftCost = rate * ageIntegral(m, in.inferences(), in.tInfer(), in.tTrain());
        // A CIL sums serving losses weighted by request counts that add up to N, plus the drift constant, so
        // this bounds every schedule's (with room for rounding). Past a double's range every CIL would be
        // infinite or NaN, and no algorithm could rank the schedules.
        if (!Double.isFinite(2 * (peak * in.inferences() + Math.abs(driftCost)))) {
            throw new ViperConfigException(String.format(
                    Locale.ROOT,
                    "schedule: the cumulative inference loss would pass the range of a double: curve %s predicts"
                            + " %slosses up to %.3g "
                            + "over iterations %d..%d, for %.3g requests",
                    in.curve().describe(),
                    rate == 0 ? "" : "(with " + in.staleness().describe() + ") ",
                    peak,
                    in.warmup(),
                    in.end(),
                    in.inferences()));
        }
    }

    /** {@code integral_0^n min(m, r * tInfer / tTrain) dr}: iterations past s summed over the requests. */
    private static double ageIntegral(int m, double n, double tInfer, double tTrain) {
        // the request at which training reaches e; written so that a cost ratio past a double's range gives
        // the limit, not NaN: full = 0 ages every request by m, full = infinity ages none
        double full = m * tTrain / tInfer;
        return n <= full ? n * (n / full) * m / 2 : m * full / 2 + m * (n - full);
    }

    /** The input this simulator was built for. */
    public ScheduleInput input() {
        return in;
    }

    /** The predicted training loss at {@code iteration} (within {@code s..e}). */
    public double loss(long iteration) {
        return loss[index(iteration)];
    }

    /** The predicted training losses of iterations {@code s..e}, index {@code i - s} (a copy). */
    public double[] losses() {
        return loss.clone();
    }

    /**
     * The serving losses {@code L(c) - rate * (c - s)} of iterations {@code s..e}, index {@code c - s}: what the
     * schedulers in this package minimise (the curve itself under Viper's objective). Shared, not copied.
     */
    double[] servingLossesUnsafe() {
        return serving;
    }

    /** The part of every schedule's CIL that the drift adds whatever the schedule (0 under Viper's objective). */
    public double driftCost() {
        return driftCost;
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
                throw new ViperConfigException("schedule: checkpoints must increase strictly within "
                        + (in.warmup() + 1) + ".." + in.end() + ", got " + c + " after " + prev);
            }
            prev = c;
        }
        double remaining = in.inferences();
        double total = 0;
        prev = in.warmup();
        for (int k = 0; k < checkpoints.length && remaining > 0; k++) {
            double n = requests(k + 1, checkpoints[k] - prev);
            double served = Math.min(n, remaining);
            total += serving[(int) (prev - in.warmup())] * served;
            remaining -= served;
            prev = checkpoints[k];
        }
        long last = checkpoints.length == 0 ? in.warmup() : checkpoints[checkpoints.length - 1];
        return total + serving[(int) (last - in.warmup())] * remaining + driftCost;
    }

    /**
     * The CIL of the fixed-interval schedule {@code s+v, s+2v, ...} up to e, with the same arithmetic as
     * {@link #cil(long[])}; stops as soon as the requests are used up.
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
            total += serving[prev] * served;
            remaining -= served;
            prev += v;
        }
        int last = count * v;
        return total + serving[last] * remaining + driftCost;
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
            throw new ViperConfigException(
                    "schedule: iteration " + iteration + " is outside " + in.warmup() + ".." + in.end());
        }
        return (int) (iteration - in.warmup());
    }
}
