package io.viper.scheduler;

import io.viper.CheckpointPolicy;
import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import java.util.Locale;

/**
 * {@code online}: a producer's {@link CheckpointPolicy} that publishes when the deployed version has become stale
 * enough to be worth replacing, measured as the run goes rather than predicted from the warm-up. At each iteration t
 * after the warm-up it
 *
 * <ol>
 *   <li>asks the {@link StalenessProbe} for the deployed version's and the current model's loss on the same sample and
 *       adds their gap, times the requests served per iteration, to an accumulated gap: the loss that serving the
 *       deployed version has cost since it was published, beyond what a fresh version would have lost;
 *   <li>publishes when that accumulated gap (once the run has measured the rate at which the gap grows with the
 *       deployed version's age, the gap that rate predicts unless the probes' sum exceeds it beyond their noise:
 *       {@link GapTrend}) reaches the threshold (until that rate is first measured, and no change came, instead at the
 *       even spacing of the budget left, so that a threshold predicted too high does not space the first checkpoints
 *       out; or the pacer finds a checkpoint {@linkplain BudgetPacer#due due}: lagging the pace after a long gap), the
 *       last checkpoint is at least {@link Config#minSpacing()} iterations back (the measured update latency: a
 *       checkpoint sooner than the path can deliver one is wasted), outside the hold after a change also
 *       {@linkplain BudgetPacer#quietSpacing half the even spacing} of the checkpoints left (in the hold, the even
 *       spacing up to its end of those the allowance leaves by then), and the {@link BudgetPacer} allows one more
 *       (never ahead of the elapsed share of the budget by more than {@link Config#burst()}, never more than
 *       {@link Config#budget()} in all); publishing resets the accumulated gap;
 *   <li>steers the threshold toward the budget's pace ({@link BudgetPacer});
 *   <li>watches the training loss for a change ({@link ChangeDetector}, a CUSUM); a change holds the threshold for
 *       {@link Config#holdAfterChange()} iterations, so that the burst of checkpoints the change calls for spends
 *       budget saved before it instead of raising the threshold, and at a change and every {@link Config#refitEvery()}
 *       iterations it re-plans off the training thread: the curve and the drift are refitted on the losses and probes
 *       since the latest change only, and the rest of the run is planned with them ({@link #currentPlan()}).
 * </ol>
 *
 * Threshold on the accumulated gap: for a gap that grows linearly with age this publishes at the interval that balances
 * the loss of serving stale against the price of one checkpoint, and a sudden jump in the gap (new data the deployed
 * version never saw) triggers checkpoints at once.
 *
 * <p>{@link #servedLossEstimate()} sums the deployed version's probed loss times the requests per iteration: the CIL
 * the probes predict the consumers served.
 *
 * <p>Called on the training thread only ({@link CheckpointPolicy}); refits run on another thread and are picked up at
 * the next call.
 */
public final class OnlineCheckpointPolicy implements CheckpointPolicy {
    /**
     * The policy's settings.
     *
     * @param warmup warm-up end s: no checkpoint before s+1 (the deployed version at s is the warm-up model)
     * @param end last iteration e
     * @param budget K, the most checkpoints it publishes
     * @param requestsPerIteration requests served per training iteration, {@code t_train / t_infer}
     * @param minSpacing the fewest iterations between two checkpoints (at least 1)
     * @param initialThreshold the accumulated gap that publishes before the measured rate replaces it, used where a
     *     change comes before the rate is measured (positive)
     * @param burst how many checkpoints may run ahead of the budget's pace (at least 0)
     * @param gain how fast the threshold follows the pace (at least 0)
     * @param holdAfterChange how many iterations after a detected change the threshold is held (at least 0)
     * @param refitEvery re-plan at least this often, in iterations (positive)
     */
    public record Config(
            long warmup,
            long end,
            int budget,
            double requestsPerIteration,
            long minSpacing,
            double initialThreshold,
            int burst,
            double gain,
            long holdAfterChange,
            long refitEvery) {
        /** The default gain of the threshold toward the pace. */
        public static final double DEFAULT_GAIN = 0.03;

        /** Checks every value; each problem is one line naming it. */
        public Config {
            if (warmup < 0 || end <= warmup) {
                throw new ViperConfigException("online policy: need 0 <= warm-up < end, got " + warmup + " and " + end);
            }
            if (budget < 1) {
                throw new ViperConfigException(
                        "online policy: the budget must be at least 1 checkpoint, got " + budget);
            }
            if (!(requestsPerIteration > 0) || !Double.isFinite(requestsPerIteration)) {
                throw new ViperConfigException(
                        "online policy: requests per iteration must be a positive number, got " + requestsPerIteration);
            }
            if (minSpacing < 1) {
                throw new ViperConfigException(
                        "online policy: the minimum spacing must be at least 1 iteration, got " + minSpacing);
            }
            if (!(initialThreshold > 0) || !Double.isFinite(initialThreshold)) {
                throw new ViperConfigException(
                        "online policy: the initial threshold must be a positive number, got " + initialThreshold);
            }
            if (burst < 0) {
                throw new ViperConfigException("online policy: the burst must be at least 0, got " + burst);
            }
            if (!(gain >= 0) || !Double.isFinite(gain)) {
                throw new ViperConfigException("online policy: the gain must be a non-negative number, got " + gain);
            }
            if (holdAfterChange < 0) {
                throw new ViperConfigException(
                        "online policy: the hold after a change must be at least 0, got " + holdAfterChange);
            }
            if (refitEvery < 1) {
                throw new ViperConfigException("online policy: the refit interval must be positive, got " + refitEvery);
            }
        }

        /**
         * The settings for a run described by {@code in} with a budget of {@code budget}: requests per iteration
         * {@code t_train / t_infer}, minimum spacing {@code ceil(t_load / t_train)} (t_load being the measured update
         * latency), the initial threshold from the predicted losses ({@link #initialThreshold(CilSimulator, int)}), a
         * burst of a tenth of the budget, the default gain, the threshold held for a twentieth of the run after a
         * change, a re-plan every quarter of the run besides those at changes.
         */
        public static Config of(ScheduleInput in, int budget) {
            return of(new CilSimulator(in), budget);
        }

        /** {@link #of(ScheduleInput, int)} for a simulator already built for the run's input. */
        public static Config of(CilSimulator sim, int budget) {
            ScheduleInput in = sim.input();
            long spacing = in.tTrain() > 0 ? Math.max(1, (long) Math.ceil(in.tLoad() / in.tTrain() - 1e-9)) : 1;
            return new Config(
                    in.warmup(),
                    in.end(),
                    budget,
                    in.tTrain() / in.tInfer(),
                    spacing,
                    initialThreshold(sim, budget),
                    Math.max(1, Math.ceilDiv(budget, 10)),
                    DEFAULT_GAIN,
                    in.span() / 20,
                    Math.max(10, in.span() / 4));
        }

        /**
         * The gap that the predicted losses accumulate over one even interval {@code h = (e - s) / budget} right after
         * the warm-up: {@code n * sum_{a=1..h} (L_0 - L_a)} over the serving losses (curve less drift), at least
         * {@code 1e-9}. Right where the predictor is right; the pace corrects it elsewhere.
         */
        public static double initialThreshold(CilSimulator sim, int budget) {
            ScheduleInput in = sim.input();
            double[] serving = sim.servingLossesUnsafe();
            int h = Math.max(1, Math.min(in.span(), in.span() / Math.max(1, budget)));
            double area = 0;
            for (int a = 1; a <= h; a++) {
                area += serving[0] - serving[a];
            }
            return Math.max(1e-9, area * in.tTrain() / in.tInfer());
        }
    }

    /**
     * The measured rate ({@link GapTrend}) forgets a probe's weight by half over this many even spacings of the budget,
     * {@code (e - s) / K}, and is used once it holds as many probes' weight: a few intervals, so that it follows a
     * drift that slows as the training converges, pooled over more than one interval's noise.
     */
    static final double TREND_SPACINGS = 2;
    /**
     * How many standard deviations of its noise the accumulated gap must exceed the measured rate's prediction by to be
     * taken as it is: a jump the steady rate does not explain (new data), not noise, which at this level a probe's sum
     * reaches once in several hundred intervals.
     */
    static final double JUMP_SIGMAS = 3;
    /**
     * How far, as a share of the even spacing of the checkpoints left, a checkpoint the measured rate calls for may
     * move to publish a version at a low of its own ({@link PanelLows}): that far before the rate's age when the panel
     * shows a low, and at most that far after it waiting for one.
     */
    static final double LOW_WINDOW = 0.25;

    private final Config cfg;
    private final StalenessProbe probe;
    private final BudgetPacer pacer;
    private final ChangeDetector changes = new ChangeDetector();
    private final GapTrend trend;
    private final PanelLows lows;
    private final double trendSpan;
    private final OnlineReplanner replanner;
    private long lastIteration = Long.MIN_VALUE;
    private long deployed;
    private double accumulated;
    private double servedEstimate;
    private int published;
    private long[] checkpoints = new long[16];
    private long lastReplan;
    private boolean replanPending;
    private long[] changePoints = new long[0];
    private boolean starting = true;
    private long triggeredAt = Long.MIN_VALUE;

    /** A policy that decides only (no re-planning), e.g. to simulate it on predicted losses. */
    public OnlineCheckpointPolicy(Config config, StalenessProbe probe) {
        this(config, probe, null);
    }

    /**
     * A policy that also re-plans with {@code replanner} (see {@link OnlineReplanner}).
     *
     * @param replanner where refits run, or null for none
     */
    public OnlineCheckpointPolicy(Config config, StalenessProbe probe, OnlineReplanner replanner) {
        if (config == null || probe == null) {
            throw new ViperConfigException("online policy: the config and the staleness probe are required");
        }
        this.cfg = config;
        this.probe = probe;
        this.replanner = replanner;
        this.pacer = new BudgetPacer(
                config.warmup(),
                config.end(),
                config.budget(),
                config.burst(),
                config.initialThreshold(),
                config.gain());
        this.trendSpan = TREND_SPACINGS * (config.end() - config.warmup()) / config.budget();
        this.trend = new GapTrend(trendSpan);
        this.lows =
                new PanelLows((int) Math.round(2 * LOW_WINDOW * (config.end() - config.warmup()) / config.budget()));
        this.deployed = config.warmup();
        this.lastReplan = config.warmup();
    }

    @Override
    public boolean shouldPublish(long iteration, double loss) {
        if (iteration <= lastIteration) {
            throw new ViperConfigException(
                    "online policy: iterations must increase, got " + iteration + " after " + lastIteration);
        }
        lastIteration = iteration;
        boolean changed = changes.observe(iteration, loss);
        if (changed) {
            changePoints = Arrays.copyOf(changePoints, changePoints.length + 1);
            changePoints[changePoints.length - 1] = changes.lastChange();
            pacer.hold(iteration + cfg.holdAfterChange());
            trend.reset();
            lows.reset();
            starting = false;
        }
        if (replanner != null) {
            replanner.recordLoss(iteration, loss);
            if (changed) {
                replanner.startSegment(changes.lastChange());
                replanPending = true;
            }
        }
        if (iteration <= cfg.warmup() || iteration > cfg.end()) {
            if (iteration == cfg.warmup() && replanner != null) {
                replanner.replan(iteration, deployed, cfg.budget());
            }
            return false;
        }
        StalenessProbe.Measurement m = probe.measure(iteration);
        if (replanner != null) {
            replanner.recordProbe(deployed, iteration, m);
        }
        double n = cfg.requestsPerIteration();
        if (Double.isFinite(m.deployed())) {
            servedEstimate += n * m.deployed();
        }
        if (Double.isFinite(m.gap())) {
            accumulated += n * m.gap();
        }
        long age = iteration - deployed;
        trend.observe(age, m.gap());
        lows.observe(m.panel());
        boolean paceStart = starting(n);
        double gap = gap(iteration, age, n);
        if (!paceStart) {
            pacer.adapt(iteration, published);
        }
        boolean wanted = paceStart
                ? age >= pacer.evenSpacing(deployed, published)
                : atLow(iteration, age, n, gap) || pacer.due(iteration, deployed, published);
        long spacing = Math.max(cfg.minSpacing(), pacer.quietSpacing(iteration, deployed, published));
        boolean allowed = published < pacer.allowance(iteration);
        boolean publish = wanted && iteration - deployed >= spacing && allowed;
        if (wanted && !allowed && !paceStart) {
            // The gap reached the threshold with no checkpoint left to spend at this pace: the threshold is below
            // what the gap measures over the pace's spacing now; raise it to that, rather than wait for the slow
            // steering, so that budget is saved for the next change instead of spent the moment the pace allows.
            pacer.raiseTo(iteration, gap);
        }
        if (publish) {
            if (published == checkpoints.length) {
                checkpoints = Arrays.copyOf(checkpoints, published * 2);
            }
            if (!paceStart) {
                pacer.calibrate(iteration, gap, iteration - deployed, deployed, published);
            }
            checkpoints[published++] = iteration;
            deployed = iteration;
            accumulated = 0;
            triggeredAt = Long.MIN_VALUE;
        }
        // after a change, as soon as the segment has enough losses to fit
        if (replanner != null
                && iteration < cfg.end()
                && (replanPending || iteration - lastReplan >= cfg.refitEvery())
                && replanner.replan(iteration, deployed, cfg.budget() - published)) {
            lastReplan = iteration;
            replanPending = false;
        }
        return publish;
    }

    /**
     * Whether the run is still in its start: before the measured rate ({@link GapTrend}) first holds
     * {@link #TREND_SPACINGS} spacings of probes, and before any change. There the policy publishes at the even spacing
     * of the budget left, as {@code epoch} would: the initial threshold is the gap the predicted curve builds over one
     * interval right after the warm-up, while the model still learns fast, and on the demo's drifting stream it was
     * about 4 times the threshold the run settles at (first checkpoints 51 and 57 iterations apart where about 40 were
     * due). The moment the rate is measured, the threshold becomes the gap that rate predicts over the even spacing of
     * what is left, {@code n * rate * h (h + 1) / 2}, and the calibration goes on from there.
     */
    private boolean starting(double n) {
        if (starting && trend.weight() >= trendSpan) {
            starting = false;
            double h = pacer.evenSpacing(deployed, published);
            pacer.reset(predictedGap(n, h));
        }
        return starting;
    }

    /**
     * The accumulated gap the threshold is compared with. The probes' sum as it is during the hold after a change and
     * before the measured rate has {@link #TREND_SPACINGS} spacings of probes; after that the larger of what the
     * measured rate predicts for the deployed version's age, {@code n * rate * age (age + 1) / 2}, and the probes' sum
     * less {@link #JUMP_SIGMAS} standard deviations of its noise ({@code sd * n * sqrt(age)}): on a steady stream the
     * checkpoints then come at the age the rate calls for, not where the noise of one interval's probes puts them (on
     * the demo's drifting stream ages from 17 to 60 iterations around a threshold that wanted 40), while a jump in the
     * gap that the rate does not explain still publishes at once.
     */
    private double gap(long iteration, long age, double n) {
        if (pacer.held(iteration) || trend.weight() < trendSpan) {
            return accumulated;
        }
        double a = (double) age;
        double predicted = predictedGap(n, a);
        double sd = trend.noise();
        double excess = Double.isFinite(sd) ? accumulated - JUMP_SIGMAS * sd * n * Math.sqrt(a) : accumulated;
        return Math.max(predicted, excess);
    }

    /**
     * The accumulated gap the measured rate predicts for a version {@code age} iterations old, at {@code n} requests
     * per iteration: {@code n * rate * age (age + 1) / 2}.
     */
    private double predictedGap(double n, double age) {
        return n * trend.rate() * age * (age + 1) / 2;
    }

    /**
     * Whether the gap calls for a checkpoint now. Where the gap is the measured rate's prediction (outside a hold, the
     * rate measured, no jump beyond it) and the probe has a panel: when the panel shows the current model at a low of
     * its own ({@link PanelLows#turnedUp()}) within {@link #LOW_WINDOW} even spacings {@code w} of the age the rate
     * calls for, before or after it, else {@code w} iterations after that age. A version that serves an interval of
     * {@code h} iterations carries its own standing over all of it, while moving a checkpoint {@code w} iterations
     * costs only the gap that grows in between. Elsewhere, as soon as the gap reaches the threshold.
     */
    private boolean atLow(long iteration, long age, double n, double gap) {
        double threshold = pacer.threshold();
        boolean reached = gap >= threshold;
        double a = (double) age;
        if (!lows.ready() || pacer.held(iteration) || trend.weight() < trendSpan || gap > predictedGap(n, a)) {
            return reached;
        }
        long w = Math.round(LOW_WINDOW * pacer.evenSpacing(deployed, published));
        if (reached && triggeredAt == Long.MIN_VALUE) {
            triggeredAt = iteration;
        }
        if (reached && iteration - triggeredAt >= w) {
            return true;
        }
        double soon = a + w;
        boolean near = reached || predictedGap(n, soon) >= threshold;
        return near && lows.turnedUp();
    }

    /** The iterations it has published at, in order. */
    public long[] publishedIterations() {
        return Arrays.copyOf(checkpoints, published);
    }

    /** How many checkpoints it has published. */
    public int publishedCount() {
        return published;
    }

    /** The threshold on the accumulated gap now. */
    public double threshold() {
        return pacer.threshold();
    }

    /**
     * The CIL the probes predict: the deployed version's probed loss times the requests, summed over the iterations so
     * far.
     */
    public double servedLossEstimate() {
        return servedEstimate;
    }

    /** The first iteration of every change the training loss showed so far, in order. */
    public long[] changes() {
        return changePoints.clone();
    }

    /** The first iteration of the latest change the training loss showed, or {@link Long#MIN_VALUE} before any. */
    public long lastChange() {
        return changes.lastChange();
    }

    /** The latest re-plan, or null before the first one finished (or without a replanner). */
    public OnlineReplanner.Plan currentPlan() {
        return replanner == null ? null : replanner.latest();
    }

    @Override
    public String describe() {
        OnlineReplanner.Plan p = currentPlan();
        return String.format(
                Locale.ROOT,
                "online(budget %d, %d published, threshold %.3g, min spacing %d%s)",
                cfg.budget(),
                published,
                pacer.threshold(),
                cfg.minSpacing(),
                p == null ? "" : ", " + p.describe());
    }
}
