package io.viper.scheduler;

import io.viper.errors.ViperException;
import io.viper.predictor.CurveFitter;
import io.viper.predictor.FitResult;
import io.viper.predictor.LossCurve;
import io.viper.predictor.StalenessModel;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.Executor;

/**
 * The re-planning half of {@link OnlineCheckpointPolicy}: it keeps the training losses and the probe measurements of
 * the current segment (everything since the latest change the policy detected; the data before a change describes a
 * stream that is gone) and, when asked, refits on them off the training thread: the loss curve ({@link CurveFitter}),
 * the drift ({@link StalenessModel#fit}) and, with the budget left, the rest of the run planned by
 * {@link OptimalAlgorithm} under the staleness-aware objective. The training thread picks the result up at its next
 * call ({@link #latest()}).
 *
 * <p>The record and replan methods belong to the training thread; {@link #latest()} may be read from any thread.
 */
public final class OnlineReplanner {
    private static final System.Logger LOG = System.getLogger(OnlineReplanner.class.getName());
    /** The fewest losses a segment needs before it is fitted. */
    static final int MIN_POINTS = 10;

    /**
     * One re-plan.
     *
     * @param madeAt the iteration it was asked for
     * @param segmentStart the first iteration of the data it was fitted on
     * @param curve the loss curve fitted on the segment
     * @param staleness the drift fitted on the segment's probes
     * @param remaining the checkpoints planned after {@code madeAt} with the budget then left, and their CIL
     */
    public record Plan(long madeAt, long segmentStart, LossCurve curve, StalenessModel staleness, Schedule remaining) {
        /** One line for logs. */
        public String describe() {
            return String.format(
                    Locale.ROOT,
                    "plan at %d on losses since %d: %s, %s, %d checkpoints planned",
                    madeAt,
                    segmentStart,
                    curve.describe(),
                    staleness.describe(),
                    remaining.count());
        }
    }

    private final ScheduleInput run;
    private final CurveFitter fitter;
    private final BackgroundRefits<Plan> refits;
    private volatile Plan latest;
    private long segmentStart = Long.MIN_VALUE;
    private final LossHistory losses = new LossHistory();
    private int segmentFirstLoss;
    private double[][] probes = new double[4][256]; // version, at, deployed, current
    private int probeCount;
    private int segmentFirstProbe;

    /**
     * Re-plans for {@code run} (its end and costs; its curve is not used) with the default fitter on a daemon thread.
     */
    public OnlineReplanner(ScheduleInput run) {
        this(run, new CurveFitter(), BackgroundRefits.DAEMON);
    }

    /**
     * Re-plans for {@code run} with {@code fitter}, refits running on {@code executor} ({@code Runnable::run} runs them
     * on the caller, which tests use to stay deterministic).
     */
    public OnlineReplanner(ScheduleInput run, CurveFitter fitter, Executor executor) {
        this.run = run;
        this.fitter = fitter;
        this.refits = new BackgroundRefits<>(executor);
    }

    void recordLoss(long iteration, double loss) {
        losses.add(iteration, loss);
    }

    void recordProbe(long version, long at, StalenessProbe.Measurement m) {
        if (!Double.isFinite(m.deployed()) || !Double.isFinite(m.current())) {
            return;
        }
        if (probeCount == probes[0].length) {
            for (int i = 0; i < probes.length; i++) {
                probes[i] = Arrays.copyOf(probes[i], probeCount * 2);
            }
        }
        probes[0][probeCount] = version;
        probes[1][probeCount] = at;
        probes[2][probeCount] = m.deployed();
        probes[3][probeCount] = m.current();
        probeCount++;
    }

    /** Forgets the data before {@code firstIteration}: a change began there. */
    void startSegment(long firstIteration) {
        segmentStart = firstIteration;
        while (segmentFirstLoss < losses.size() && losses.iteration(segmentFirstLoss) < firstIteration) {
            segmentFirstLoss++;
        }
        while (segmentFirstProbe < probeCount && probes[1][segmentFirstProbe] < firstIteration) {
            segmentFirstProbe++;
        }
    }

    /**
     * Starts a re-plan at {@code now} with {@code budgetLeft} checkpoints on the segment's data, unless one is running
     * or the segment has fewer than {@link #MIN_POINTS} losses; returns whether it started.
     */
    boolean replan(long now, long deployed, int budgetLeft) {
        int n = losses.size() - segmentFirstLoss;
        if (n < MIN_POINTS || now >= run.end() || refits.busy()) {
            return false;
        }
        double[] x = losses.iterations(segmentFirstLoss, losses.size());
        double[] y = losses.losses(segmentFirstLoss, losses.size());
        double[][] p = new double[4][];
        for (int i = 0; i < 4; i++) {
            p[i] = Arrays.copyOfRange(probes[i], segmentFirstProbe, probeCount);
        }
        long from = segmentStart == Long.MIN_VALUE ? (long) x[0] : segmentStart;
        return refits.submit(() -> plan(now, from, x, y, p, Math.max(0, budgetLeft)));
    }

    private Plan plan(long now, long from, double[] x, double[] y, double[][] p, int budgetLeft) {
        try {
            FitResult fit = fitter.fit(x, y);
            StalenessModel drift = StalenessModel.fit(fit.curve(), p[0], p[1], p[2], p[3]);
            double requests = (run.end() - now) * run.tTrain() / run.tInfer();
            ScheduleInput rest = new ScheduleInput(
                    fit.curve(),
                    now,
                    run.end(),
                    requests > 0 ? requests : 1,
                    run.tTrain(),
                    run.tSave(),
                    run.tLoad(),
                    run.tInfer(),
                    drift);
            CilSimulator sim = new CilSimulator(rest);
            Schedule remaining = budgetLeft == 0
                    ? sim.schedule("online", new long[0], "budget spent")
                    : new OptimalAlgorithm(budgetLeft).schedule(sim);
            Plan plan = new Plan(now, from, fit.curve(), drift, remaining);
            latest = plan;
            return plan;
        } catch (ViperException | ArithmeticException e) {
            LOG.log(
                    System.Logger.Level.DEBUG,
                    "online re-plan at iteration {0} failed ({1}); keeping the previous plan",
                    Long.toString(now),
                    e.getMessage());
            return null;
        }
    }

    /** The latest finished re-plan, or null before the first. */
    Plan latest() {
        return latest;
    }
}
