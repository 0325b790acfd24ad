package io.viper.scheduler;

import io.viper.CheckpointPolicy;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.CurveFitter;
import io.viper.predictor.FitResult;
import io.viper.predictor.LossCurve;
import java.util.Arrays;
import java.util.concurrent.Executor;

/**
 * A producer's {@link CheckpointPolicy} driven by the loss predictor: it records every (iteration, loss) it is shown,
 * fits the loss curve at the end of warm-up, plans the checkpoints of {@code s+1..e} with the configured algorithm, and
 * every {@code refitEvery} iterations refits the curve on all losses seen so far and re-plans the rest of the run.
 *
 * <p>Re-planning at iteration {@code now} (after deciding about {@code now} itself) schedules {@code now+1..e} with
 * {@code c_0 = now}, the budget left ({@code maxCheckpoints} less those published; none once it is spent) and the
 * requests still to serve, estimated as {@code N} minus the requests served since s by the elapsed time {@code ((now -
 * s) * t_train + published * t_s + t_load) / t_infer}. When {@code now} was just published this matches the simulator
 * exactly; otherwise the consumer still serves an older model until the next checkpoint, which the plan approximates by
 * {@code L(now)}.
 *
 * <p>Fits and plans run off the training thread ({@link BackgroundRefits}): {@code shouldPublish} hands the losses over
 * and returns at once, and picks up the new plan at a later call, whose planned iterations that have already passed are
 * caught up with one checkpoint. {@code shouldPublish} returns true at a planned iteration, or at the first iteration
 * past a planned one when iterations skip, and never more than {@code maxCheckpoints} times in all. A fit or plan that
 * fails (too few losses, no BLAS library) is logged and the previous plan kept; without any plan, the policy falls back
 * to ten evenly spaced checkpoints. {@code optimal} re-plans break near-ties toward even spacing
 * ({@link OptimalAlgorithm}), so that a tiny change in a cost does not swap the plan for a very different one. Called
 * on the training thread only, as {@link CheckpointPolicy} says.
 */
public final class PredictedCheckpointPolicy implements CheckpointPolicy {
    private static final System.Logger LOG = System.getLogger(PredictedCheckpointPolicy.class.getName());

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
     * @param maxCheckpoints the most checkpoints it publishes in all; each re-plan gets what is left
     * @param epochIters interval of the epoch algorithm (positive)
     */
    public record Config(
            CheckpointPlanner.Algorithm algorithm,
            long warmup,
            long end,
            double inferences,
            double tTrain,
            double tSave,
            double tLoad,
            double tInfer,
            long refitEvery,
            int maxCheckpoints,
            long epochIters) {
        /** Validates the values (the cost fields as {@link ScheduleInput} does). */
        public Config {
            if (algorithm == null) {
                throw new ViperConfigException("predicted policy: algorithm is missing");
            }
            if (refitEvery <= 0) {
                throw new ViperConfigException("predicted policy: refit interval must be positive, got " + refitEvery);
            }
            if (maxCheckpoints < 1) {
                throw new ViperConfigException(
                        "predicted policy: max-checkpoints must be at least 1, got " + maxCheckpoints);
            }
            if (epochIters <= 0) {
                throw new ViperConfigException("predicted policy: epoch-iters must be positive, got " + epochIters);
            }
            new ScheduleInput(CurveFamily.LIN2.curve(0, 0), warmup, end, inferences, tTrain, tSave, tLoad, tInfer);
        }
    }

    /** A finished re-plan: the schedule made at {@code madeAt}, or why it failed. */
    private record Replan(long madeAt, Schedule schedule, LossCurve curve, String failure) {}

    private final Config cfg;
    private final CurveFitter fitter;
    private final BackgroundRefits<Replan> refits;
    private final LossHistory seen = new LossHistory();
    private long[] plan = new long[0];
    private int next;
    private long lastPlan = Long.MIN_VALUE;
    private long lastIteration = Long.MIN_VALUE;
    private int published;
    private Schedule schedule;
    private LossCurve curve;

    /** A policy that fits with the default {@link CurveFitter}, off the training thread. */
    public PredictedCheckpointPolicy(Config config) {
        this(config, new CurveFitter());
    }

    /** A policy with the given fitter, off the training thread. */
    public PredictedCheckpointPolicy(Config config, CurveFitter fitter) {
        this(config, fitter, BackgroundRefits.DAEMON);
    }

    /**
     * A policy with the given fitter whose refits run on {@code executor} ({@code Runnable::run}: on the training
     * thread, which tests use to stay deterministic).
     */
    public PredictedCheckpointPolicy(Config config, CurveFitter fitter, Executor executor) {
        this.cfg = config;
        this.fitter = fitter;
        this.refits = new BackgroundRefits<>(executor);
    }

    /**
     * A policy that starts from an already computed schedule (e.g. by {@code viper schedule}) and refits from the first
     * refit point after s on.
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
            throw new ViperConfigException(
                    "predicted policy: iterations must increase, got " + iteration + " after " + lastIteration);
        }
        lastIteration = iteration;
        seen.add(iteration, loss);
        Replan done = refits.take();
        if (done != null) {
            adopt(done);
        }
        boolean publish = false;
        if (iteration > cfg.warmup() && iteration <= cfg.end()) {
            while (next < plan.length && plan[next] <= iteration) {
                next++;
                publish = true;
            }
        }
        publish &= published < cfg.maxCheckpoints();
        if (publish) {
            published++;
        }
        if (iteration >= cfg.warmup()
                && iteration < cfg.end()
                && (lastPlan == Long.MIN_VALUE || iteration - lastPlan >= cfg.refitEvery())) {
            long now = iteration;
            double[] x = seen.iterations(0, seen.size());
            double[] y = seen.losses(0, seen.size());
            int spent = published;
            if (refits.submit(() -> replan(now, x, y, spent))) {
                lastPlan = iteration;
            }
            Replan sync = refits.take(); // a synchronous executor has finished already
            if (sync != null) {
                adopt(sync);
            }
        }
        return publish;
    }

    /** Fits and plans on a snapshot of the losses; runs on the refit thread. */
    private Replan replan(long now, double[] x, double[] y, int spent) {
        try {
            FitResult fit = fitter.fit(x, y);
            double served = ((now - cfg.warmup()) * cfg.tTrain() + spent * cfg.tSave() + cfg.tLoad()) / cfg.tInfer();
            double left = now == cfg.warmup() ? cfg.inferences() : cfg.inferences() - served;
            int cap = cfg.maxCheckpoints() - spent;
            if (!(left > 0) || cap <= 0) {
                return new Replan(now, null, fit.curve(), null);
            }
            ScheduleInput in = new ScheduleInput(
                    fit.curve(), now, cfg.end(), left, cfg.tTrain(), cfg.tSave(), cfg.tLoad(), cfg.tInfer());
            CheckpointPlanner planner = new CheckpointPlanner(in);
            // only adaptive uses the threshold, taken from the curve it is applied to
            double threshold = cfg.algorithm() == CheckpointPlanner.Algorithm.ADAPTIVE
                    ? warmupThreshold(fit.curve(), now)
                    : Double.NaN;
            Schedule sch =
                    planner.schedule(cfg.algorithm(), new CheckpointPlanner.Options(cap, threshold, cfg.epochIters()));
            return new Replan(now, sch, fit.curve(), null);
        } catch (ViperException | ArithmeticException e) {
            return new Replan(now, null, null, e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }

    /** The adaptive threshold from the curve's drops over the warm-up (at least two iterations of it). */
    private double warmupThreshold(LossCurve fitted, long now) {
        long s = Math.max(2, Math.min(cfg.warmup(), now));
        return new CheckpointPlanner(
                        new ScheduleInput(fitted, s, s + 1, 1, cfg.tTrain(), cfg.tSave(), cfg.tLoad(), cfg.tInfer()))
                .curveThreshold();
    }

    /**
     * Takes a finished re-plan on the training thread; its iterations already passed are caught up with the next
     * checkpoint.
     */
    private void adopt(Replan r) {
        if (r.failure() == null) {
            curve = r.curve();
            schedule = r.schedule();
            plan = r.schedule() == null ? new long[0] : r.schedule().checkpoints();
            next = 0;
            return;
        }
        if (schedule == null) {
            long v = Math.max(1, (cfg.end() - cfg.warmup()) / 10);
            long[] fallback = new long
                    [(int) Math.min(cfg.maxCheckpoints() - published, Math.max(0, (cfg.end() - r.madeAt()) / v))];
            for (int i = 0; i < fallback.length; i++) {
                fallback[i] = r.madeAt() + (i + 1) * v;
            }
            plan = fallback;
            next = 0;
            LOG.log(
                    System.Logger.Level.WARNING,
                    "checkpoint plan at iteration " + r.madeAt() + " failed (" + r.failure() + "); checkpointing every "
                            + v + " iterations until a refit succeeds");
        } else {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "checkpoint re-plan at iteration " + r.madeAt() + " failed (" + r.failure()
                            + "); keeping the previous plan");
        }
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

    /** How many iterations this policy has said to publish (at most {@code maxCheckpoints}). */
    public int publishedCount() {
        return published;
    }

    @Override
    public String describe() {
        return "predicted(" + cfg.algorithm().displayName() + ", refit every " + cfg.refitEvery() + ", "
                + (curve == null ? "no curve yet" : curve.describe()) + ", " + (plan.length - next)
                + " checkpoints planned)";
    }
}
