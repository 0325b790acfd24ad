package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.CurveFitter;
import io.viper.predictor.StalenessModel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class OnlineCheckpointPolicyTest {
    static final ScheduleInput RUN =
            new ScheduleInput(CurveFamily.EXP3.curve(2, 0.01, 0.1), 200, 2000, 3600, 0.005, 0.0005, 0.02, 0.0025);

    /**
     * A stream whose deployed version falls behind at {@code drift} per iteration of age, and where new data arrives at
     * 1000: the training loss jumps, and a version knows the new data the better the longer after 1000 it was trained
     * (fully after 50 iterations).
     */
    static final class Stream implements StalenessProbe {
        final Random r;
        final double drift;
        long deployed;

        Stream(long seed, double drift, long start) {
            this.r = new Random(seed);
            this.drift = drift;
            this.deployed = start;
        }

        double loss(long i) {
            double bump = i >= 1000 ? 0.8 * Math.exp(-(i - 1000) / 60.0) : 0;
            return (0.2 + Math.exp(-i / 100.0) + bump) * (1 + 0.03 * r.nextGaussian());
        }

        @Override
        public Measurement measure(long t) {
            double current = loss(t);
            return new Measurement(
                    current
                            + drift * (t - deployed)
                            + unlearned(deployed, t)
                            - unlearned(t, t)
                            + 0.05 * r.nextGaussian(),
                    current);
        }

        static double unlearned(long version, long t) {
            return t < 1000 ? 0 : Math.max(0, 1 - Math.max(0, version - 1000) / 50.0);
        }
    }

    /**
     * 30 checkpoints over 200..2000, minimum spacing 4, a burst of 3, the threshold held 90 iterations after a change.
     */
    static final OnlineCheckpointPolicy.Config JUMP =
            new OnlineCheckpointPolicy.Config(200, 2000, 30, 2, 4, 0.5, 3, 0.03, 90, 450);

    static List<Long> drive(OnlineCheckpointPolicy p, Stream s, long end) {
        List<Long> out = new ArrayList<>();
        for (long i = 1; i <= end; i++) {
            if (p.shouldPublish(i, s.loss(i))) {
                out.add(i);
                s.deployed = i;
            }
        }
        return out;
    }

    @Test
    void neverExceedsItsBudgetItsPaceOrItsSpacing() {
        Random r = new Random(17);
        for (int t = 0; t < 200; t++) {
            int budget = 1 + r.nextInt(40);
            long spacing = 1L + r.nextInt(12);
            int burst = r.nextInt(6);
            long s = 1L + r.nextInt(100);
            long e = s + 10 + r.nextInt(600);
            double gain = r.nextDouble();
            OnlineCheckpointPolicy.Config cfg = new OnlineCheckpointPolicy.Config(
                    s,
                    e,
                    budget,
                    0.5 + r.nextDouble() * 4,
                    spacing,
                    r.nextDouble() * 2 + 1e-6,
                    burst,
                    gain,
                    r.nextInt(100),
                    50);
            // anything from silence to huge jumps, even NaN
            StalenessProbe wild = it -> new StalenessProbe.Measurement(
                    r.nextInt(20) == 0 ? Double.NaN : r.nextDouble() * (r.nextBoolean() ? 100 : 0.01), 0);
            OnlineCheckpointPolicy p = new OnlineCheckpointPolicy(cfg, wild);
            BudgetPacer pace = new BudgetPacer(s, e, budget, burst, 1, 0);
            long last = s;
            int n = 0;
            for (long i = 1; i <= e + 5; i++) {
                if (p.shouldPublish(i, r.nextDouble())) {
                    n++;
                    assertTrue(i > s && i <= e, "case " + t + ": published at " + i + " outside " + (s + 1) + ".." + e);
                    assertTrue(i - last >= spacing, "case " + t + ": " + i + " only " + (i - last) + " after " + last);
                    assertTrue(n <= pace.allowance(i), "case " + t + ": " + n + " published by " + i);
                    last = i;
                }
            }
            assertTrue(n <= budget, "case " + t + ": " + n + " > " + budget);
            assertEquals(n, p.publishedCount());
        }
    }

    @Test
    void thePacerSteersTheThresholdTowardThePaceExceptWhileHeld() {
        BudgetPacer p = new BudgetPacer(0, 100, 10, 2, 1.0, 0.5);
        assertEquals(3, p.allowance(10), "one paced by 10, plus a burst of 2");
        assertEquals(10, p.allowance(100));
        p.adapt(10, 3); // two ahead of the pace: up
        double up = p.threshold();
        assertTrue(up > 1.0, "" + up);
        p.hold(20);
        p.adapt(20, 9);
        assertEquals(up, p.threshold(), 0.0, "held");
        p.adapt(50, 0); // five behind: down
        assertTrue(p.threshold() < up, "" + p.threshold());
    }

    @Test
    void aCheckpointIsDueOnlyLaggingThePaceAfterTwiceTheEvenSpacingOfWhatIsLeft() {
        BudgetPacer p = new BudgetPacer(0, 100, 10, 2, 1.0, 0.5);
        // nothing published since 0: 10 left, evenly 100 / 11 apart, so due from 2 x 9.09 = 18.2 on
        assertEquals(false, p.due(18, 0, 0));
        assertEquals(true, p.due(19, 0, 0));
        assertEquals(false, p.due(50, 40, 5), "on the pace (5 by 50): the threshold decides");
        assertEquals(true, p.due(80, 40, 5), "3 behind, 40 since the last, 2 x 60 / 6 = 20");
        assertEquals(false, p.due(99, 90, 10), "the budget is spent");
    }

    @Test
    void spendsItsWholeBudgetWhereTheThresholdAloneWouldLeaveItUnspent() {
        // A gap too small ever to reach the threshold, which does not move (gain 0): the threshold alone publishes
        // nothing.
        OnlineCheckpointPolicy.Config cfg = new OnlineCheckpointPolicy.Config(200, 2000, 10, 2, 4, 1e9, 2, 0, 0, 450);
        StalenessProbe quiet = it -> new StalenessProbe.Measurement(1.0, 0.999);
        OnlineCheckpointPolicy p = new OnlineCheckpointPolicy(cfg, quiet);
        List<Long> published = new ArrayList<>();
        for (long i = 1; i <= 2000; i++) {
            if (p.shouldPublish(i, 1.0)) {
                published.add(i);
            }
        }
        assertEquals(10, published.size(), published.toString());
        for (int k = 1; k < published.size(); k++) {
            assertTrue(published.get(k) - published.get(k - 1) >= 4, "the minimum spacing: " + published);
        }
        assertTrue(published.getFirst() > 200 + 1800 / 11, "not before it lags: " + published);
    }

    @Test
    void outsideAHoldACheckpointWaitsHalfTheEvenSpacingOfWhatIsLeft() {
        BudgetPacer p = new BudgetPacer(0, 100, 10, 2, 1.0, 0.5);
        assertEquals(4, p.quietSpacing(10, 0, 0), "nothing published: 0.5 x 100 / 11 = 4.5");
        assertEquals(5, p.quietSpacing(50, 40, 5), "5 left from 40: 0.5 x 60 / 6");
        assertEquals(0, p.quietSpacing(99, 90, 10), "the budget is spent");
        p.hold(60);
        assertEquals(6, p.quietSpacing(45, 30, 4), "held: the 4 the allowance leaves by 60 spread over 30..60");
        assertEquals(0, p.quietSpacing(55, 50, 8), "held, the allowance by the hold's end spent");
        assertEquals(5, p.quietSpacing(61, 40, 5), "the hold is over");
    }

    @Test
    void theBurstAfterAChangeIsSpreadOverTheHold() {
        // The gap jumps at 1000 and stays far above the threshold while the new data is learnt: without a spacing in
        // the hold, the checkpoints came every minSpacing (4) iterations until the allowance stopped them, and none
        // was left for the rest of the hold.
        Stream s = new Stream(3, 2e-5, 200);
        OnlineCheckpointPolicy p = new OnlineCheckpointPolicy(JUMP, s);
        List<Long> published = drive(p, s, 2000);
        long change = p.changes()[0];
        List<Long> held =
                published.stream().filter(i -> i > change && i <= change + 90).toList();
        assertTrue(held.size() >= 3, "a burst still: " + published);
        for (int k = 1; k < held.size(); k++) {
            assertTrue(held.get(k) - held.get(k - 1) >= 8, "spread over the hold: " + published);
        }
        assertTrue(held.getLast() > change + 45, "into the second half of the hold: " + published);
    }

    @Test
    void aPolicyThatLaggedItsPaceCatchesUpWithoutABurst() {
        // The threshold cannot fire for the first half (gain 0: it stays put), then the gap jumps far
        // above it on a steady loss (no change for the CUSUM to see): without the quiet spacing the
        // policy would publish every minSpacing iterations until the burst allowance stops it.
        OnlineCheckpointPolicy.Config cfg = new OnlineCheckpointPolicy.Config(200, 2000, 20, 2, 1, 1.0, 10, 0, 0, 450);
        StalenessProbe gap = it -> new StalenessProbe.Measurement(it < 1100 ? 1e-9 : 1e6, 0);
        OnlineCheckpointPolicy p = new OnlineCheckpointPolicy(cfg, gap);
        List<Long> published = new ArrayList<>();
        for (long i = 1; i <= 2000; i++) {
            if (p.shouldPublish(i, 1.0)) {
                published.add(i);
            }
        }
        assertTrue(p.changes().length == 0, "a steady loss shows no change");
        for (int k = 1; k < published.size(); k++) {
            long last = published.get(k - 1);
            long wait = (long) Math.floor(BudgetPacer.QUIET_SPACING * (2000 - last) / (20 - k + 1));
            assertTrue(
                    published.get(k) - last >= wait,
                    "checkpoint " + k + " only " + (published.get(k) - last) + " after " + last
                            + ", half the even spacing is " + wait + ": " + published);
        }
        long inTheFirstTen =
                published.stream().filter(i -> i >= 1100 && i < 1110).count();
        assertTrue(inTheFirstTen <= 1, "no burst as it catches up: " + published);
    }

    @Test
    void spendsTheBudgetSavedInQuietStretchesRightAfterAJump() {
        Stream s = new Stream(3, 2e-5, 200);
        OnlineCheckpointPolicy p = new OnlineCheckpointPolicy(JUMP, s);
        List<Long> published = drive(p, s, 2000);
        assertTrue(published.size() <= 30, published.toString());
        long soonAfter =
                published.stream().filter(i -> i >= 1000 && i < 1000 + 40).count();
        long before = published.stream().filter(i -> i >= 900 && i < 1000).count();
        assertTrue(soonAfter >= 3 && soonAfter > before, published.toString());
        assertTrue(
                published.stream().anyMatch(i -> i >= 1000 && i <= 1015),
                "publishes as the new data is learnt: " + published);
        // the probes' own estimate of the CIL: the deployed loss times the requests per iteration
        assertTrue(
                p.servedLossEstimate() > 0.2 * 2 * 1800 && p.servedLossEstimate() < 3 * 2 * 1800,
                "" + p.servedLossEstimate());
    }

    @Test
    void aChangeReplansOnTheLossesSinceTheChangeOnly() {
        OnlineCheckpointPolicy.Config cfg =
                new OnlineCheckpointPolicy.Config(200, 2000, 30, 2, 4, 0.5, 3, 0.03, 90, 100_000);
        Stream s = new Stream(5, 2e-4, 200);
        OnlineReplanner replanner = new OnlineReplanner(RUN, new CurveFitter(), Runnable::run);
        OnlineCheckpointPolicy p = new OnlineCheckpointPolicy(cfg, s, replanner);
        drive(p, s, 999);
        OnlineReplanner.Plan first = p.currentPlan();
        assertNotNull(first, "planned at the warm-up end");
        assertEquals(200, first.madeAt());
        assertEquals(1, first.segmentStart());
        drive(new Continue(p), s, 1200);
        long change = p.lastChange();
        assertTrue(change >= 997 && change <= 1010, "change dated " + change);
        OnlineReplanner.Plan after = p.currentPlan();
        assertEquals(change, after.segmentStart(), after.describe());
        assertTrue(after.madeAt() > change && after.madeAt() < 1100, after.describe());
        long spentBefore = Arrays.stream(p.publishedIterations())
                .filter(i -> i <= after.madeAt())
                .count();
        assertTrue(after.remaining().count() <= 30 - spentBefore, after.describe());
        assertTrue(
                after.remaining().checkpoints().length == 0 || after.remaining().checkpoints()[0] > after.madeAt(),
                after.describe());
        assertTrue(p.describe().startsWith("online(budget 30, "), p.describe());
    }

    @Test
    void refitsRunOffTheTrainingThread() {
        List<Runnable> handedOver = new ArrayList<>();
        OnlineReplanner replanner = new OnlineReplanner(RUN, new CurveFitter(), handedOver::add);
        Stream s = new Stream(6, 1e-4, 200);
        OnlineCheckpointPolicy p = new OnlineCheckpointPolicy(
                OnlineCheckpointPolicy.Config.of(RUN.withStaleness(new StalenessModel(1e-4)), 20), s, replanner);
        drive(p, s, 400);
        assertEquals(1, handedOver.size(), "the warm-up end handed one refit over, and a running one blocks the next");
        assertNull(p.currentPlan());
        handedOver.getFirst().run();
        assertNotNull(p.currentPlan());
    }

    @Test
    void theInitialThresholdComesFromThePredictedLosses() {
        OnlineCheckpointPolicy.Config viper = OnlineCheckpointPolicy.Config.of(RUN, 45);
        OnlineCheckpointPolicy.Config stale =
                OnlineCheckpointPolicy.Config.of(RUN.withStaleness(new StalenessModel(1e-3)), 45);
        assertEquals(2.0, viper.requestsPerIteration(), 1e-12);
        assertEquals(4, viper.minSpacing(), "20 ms of update latency at 5 ms per iteration");
        assertEquals(5, viper.burst());
        // drift adds 1e-3 * a for a = 1..40 iterations of age, times 2 requests per iteration
        assertEquals(viper.initialThreshold() + 2 * 1e-3 * 40 * 41 / 2, stale.initialThreshold(), 1e-9);
        String m = assertThrows(
                        ViperConfigException.class,
                        () -> new OnlineCheckpointPolicy.Config(200, 100, 3, 1, 1, 1, 0, 0, 0, 1))
                .getMessage();
        assertTrue(m.startsWith("online policy: ") && !m.contains("\n"), m);
        assertThrows(
                ViperConfigException.class, () -> new OnlineCheckpointPolicy.Config(0, 100, 0, 1, 1, 1, 0, 0, 0, 1));
        assertThrows(
                ViperConfigException.class, () -> new OnlineCheckpointPolicy.Config(0, 100, 3, 1, 0, 1, 0, 0, 0, 1));
    }

    @Test
    void itsPlanOnPredictedLossesStaysWithinItsBudget() {
        ScheduleInput in = RUN.withStaleness(new StalenessModel(2e-4));
        CilSimulator sim = new CilSimulator(in);
        Schedule plan = new OnlineAlgorithm(45).schedule(sim);
        assertTrue(plan.count() > 0 && plan.count() <= 45, plan.toString());
        assertEquals(sim.cil(plan.checkpoints()), plan.cil(), 0.0);
        assertEquals(plan, new OnlineAlgorithm(45).schedule(sim), "deterministic");
        assertEquals("online", plan.algorithm());
    }

    /** Continues driving the same policy from where {@link #drive} stopped. */
    private record Continue(OnlineCheckpointPolicy p) {}

    private static void drive(Continue c, Stream s, long end) {
        for (long i = 1000; i <= end; i++) {
            if (c.p().shouldPublish(i, s.loss(i))) {
                s.deployed = i;
            }
        }
    }
}
