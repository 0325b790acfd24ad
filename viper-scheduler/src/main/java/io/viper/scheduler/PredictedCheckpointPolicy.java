package io.viper.scheduler;

import io.viper.CheckpointPolicy;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.CurveFitter;
import io.viper.predictor.FitResult;
import io.viper.predictor.LossCurve;
import java.util.Arrays;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A producer's {@link CheckpointPolicy} driven by the loss predictor: it records every
 * (iteration, loss) it is shown, fits the loss curve at the end of warm-up, plans the checkpoints
 * of {@code s+1..e} with the configured algorithm, and every {@code refitEvery} iterations refits the
 * curve on all losses seen so far and re-plans the rest of the run.
 *
 * <p>Re-planning at iteration {@code now} (after deciding about {@code now} itself) schedules
 * {@code now+1..e} with {@code c_0 = now} and the requests still to serve, estimated as
 * {@code N} minus the requests served since s by the elapsed time
 * {@code ((now - s) * t_train + published * t_s + t_load) / t_infer}. When {@code now} was just
 * published this matches the simulator exactly; otherwise the consumer still serves an older model
 * until the next checkpoint, which the plan approximates by {@code L(now)}.
 *
 * <p>{@code shouldPublish} returns true at a planned iteration, or at the first iteration past a
 * planned one when iterations skip. A fit or plan that fails (too few losses, no BLAS library) is
 * logged and the previous plan kept; without any plan, the policy falls back to ten evenly spaced
 * checkpoints. A refit costs a curve fit (a few to a few hundred milliseconds) and a plan on the
 * training thread, once per {@code refitEvery} iterations. Not thread-safe, as
 * {@link CheckpointPolicy} allows.
 */
public final class PredictedCheckpointPolicy implements CheckpointPolicy {
    private static final Logger LOG = Logger.getLogger(PredictedCheckpointPolicy.class.getName());

    /**
     * The plan's fixed inputs.
     *
     * @param algorithm which schedule to follow
     * @param warmup warm-up end s: no checkpoint before s+1; the first plan is made at s
     * @param end last iteration e
     * @param inferences total requests N
     * @param tTrain seconds per iteration
     * @param tSave producer stall per checkpoint
     * @param tLoad consumer load time
     * @param tInfer seconds per request
     * @param refitEvery refit and re-plan every this many iterations after s (positive)
     * @param maxCheckpoints cap for fixed, adaptive and optimal
     * @param epochIters interval of the epoch algorithm (positive)
     */
    public record Config(CheckpointPlanner.Algorithm algorithm, long warmup, long end, double inferences, double tTrain,
            double tSave, double tLoad, double tInfer, long refitEvery, int maxCheckpoints, long epochIters) {
        /** Validates the values (the cost fields as {@link ScheduleInput} does). */
        public Config {
            if (algorithm == null) {
                throw new ViperConfigException("predicted policy: algorithm is missing");
            }
            if (refitEvery <= 0) {
                throw new ViperConfigException("predicted policy: refit interval must be positive, got " + refitEvery);
            }
            if (maxCheckpoints < 1) {
                throw new ViperConfigException("predicted policy: max-checkpoints must be at least 1, got " + maxCheckpoints);
            }
            if (epochIters <= 0) {
                throw new ViperConfigException("predicted policy: epoch-iters must be positive, got " + epochIters);
            }
            new ScheduleInput(CurveFamily.LIN2.curve(0, 0), warmup, end, inferences, tTrain, tSave, tLoad, tInfer);
        }
    }

    private final Config cfg;
    private final CurveFitter fitter;
    private double[] xs = new double[1024];
    private double[] ys = new double[1024];
    private int seen;
    private long[] plan = new long[0];
    private int next;
    private long lastPlan = Long.MIN_VALUE;
    private long lastIteration = Long.MIN_VALUE;
    private int published;
    private Schedule schedule;
    private LossCurve curve;

    /** A policy that fits with the default {@link CurveFitter}. */
    public PredictedCheckpointPolicy(Config config) {
        this(config, new CurveFitter());
    }

    /** A policy with the given fitter. */
    public PredictedCheckpointPolicy(Config config, CurveFitter fitter) {
        this.cfg = config;
        this.fitter = fitter;
    }

    /**
     * A policy that starts from an already computed schedule (e.g. by {@code viper schedule}) and
     * refits from the first refit point after s on.
     */
    public PredictedCheckpointPolicy(Config config, CurveFitter fitter, Schedule initial) {
        this(config, fitter);
        this.schedule = initial;
        this.plan = initial.checkpoints();
        this.lastPlan = config.warmup();
    }

    @Override
    public boolean shouldPublish(long iteration, double loss) {
        if (iteration <= lastIteration) {
            throw new ViperConfigException("predicted policy: iterations must increase, got " + iteration + " after " + lastIteration);
        }
        lastIteration = iteration;
        if (Double.isFinite(loss)) {
            record(iteration, loss);
        }
        boolean publish = false;
        if (iteration > cfg.warmup() && iteration <= cfg.end()) {
            while (next < plan.length && plan[next] <= iteration) {
                next++;
                publish = true;
            }
        }
        if (publish) {
            published++;
        }
        if (iteration >= cfg.warmup() && iteration < cfg.end()
                && (lastPlan == Long.MIN_VALUE || iteration - lastPlan >= cfg.refitEvery())) {
            replan(iteration);
        }
        return publish;
    }

    private void record(long iteration, double loss) {
        if (seen == xs.length) {
            xs = Arrays.copyOf(xs, seen * 2);
            ys = Arrays.copyOf(ys, seen * 2);
        }
        xs[seen] = iteration;
        ys[seen] = loss;
        seen++;
    }

    private void replan(long now) {
        lastPlan = now;
        try {
            FitResult fit = fitter.fit(Arrays.copyOf(xs, seen), Arrays.copyOf(ys, seen));
            double served = ((now - cfg.warmup()) * cfg.tTrain() + published * cfg.tSave() + cfg.tLoad()) / cfg.tInfer();
            double left = now == cfg.warmup() ? cfg.inferences() : cfg.inferences() - served;
            if (!(left > 0)) {
                plan = new long[0];
                next = 0;
                curve = fit.curve();
                return;
            }
            ScheduleInput in = new ScheduleInput(fit.curve(), now, cfg.end(), left, cfg.tTrain(), cfg.tSave(), cfg.tLoad(), cfg.tInfer());
            int cap = Math.max(1, cfg.maxCheckpoints() - published);
            // only adaptive uses the threshold; the others must not fail for want of warm-up losses
            double threshold = cfg.algorithm() == CheckpointPlanner.Algorithm.ADAPTIVE
                    ? CheckpointPlanner.adaptiveThreshold(warmupLosses()) : Double.NaN;
            Schedule sch = new CheckpointPlanner(in).schedule(cfg.algorithm(),
                    new CheckpointPlanner.Options(cap, threshold, cfg.epochIters()));
            curve = fit.curve();
            schedule = sch;
            plan = sch.checkpoints();
            next = 0;
        } catch (ViperException | ArithmeticException e) {
            if (schedule == null) {
                long v = Math.max(1, (cfg.end() - cfg.warmup()) / 10);
                long[] fallback = new long[(int) ((cfg.end() - now) / v)];
                for (int i = 0; i < fallback.length; i++) {
                    fallback[i] = now + (i + 1) * v;
                }
                plan = fallback;
                next = 0;
                LOG.log(Level.WARNING, "checkpoint plan at iteration " + now + " failed (" + e.getMessage()
                        + "); checkpointing every " + v + " iterations until a refit succeeds");
            } else {
                LOG.log(Level.WARNING, "checkpoint re-plan at iteration " + now + " failed (" + e.getMessage() + "); keeping the previous plan");
            }
        }
    }

    private double[] warmupLosses() {
        int n = 0;
        while (n < seen && xs[n] <= cfg.warmup()) {
            n++;
        }
        return Arrays.copyOf(ys, n);
    }

    /** The checkpoint iterations still planned (after the last iteration seen). */
    public long[] remainingPlan() {
        return Arrays.copyOfRange(plan, next, plan.length);
    }

    /** The latest schedule, or {@code null} before the first plan. */
    public Schedule currentSchedule() {
        return schedule;
    }

    /** The latest fitted curve, or {@code null} before the first successful fit. */
    public LossCurve currentCurve() {
        return curve;
    }

    /** How many iterations this policy has said to publish. */
    public int publishedCount() {
        return published;
    }

    @Override
    public String describe() {
        return "predicted(" + cfg.algorithm().displayName() + ", refit every " + cfg.refitEvery() + ", "
                + (curve == null ? "no curve yet" : curve.describe()) + ", " + (plan.length - next) + " checkpoints planned)";
    }
}
