package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.predictor.CurveFamily;
import io.viper.predictor.StalenessModel;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Issue 41 and 38 (item 9): plans that hold on any run, and say when they should not be trusted. */
class RobustPlanTest {
    /** A curve that has finished falling long before the warm-up ends: exp3 decays by e every 20 iterations. */
    static final ScheduleInput FLAT_AFTER_WARMUP =
            new ScheduleInput(CurveFamily.EXP3.curve(2.5, 0.05, 0.12), 200, 2000, 3600, 0.005, 1e-4, 0.002, 0.0025);

    @Test
    void adaptiveFallsBackAndSaysSoWhenItsThresholdIsNeverMet() {
        CilSimulator sim = new CilSimulator(FLAT_AFTER_WARMUP);
        double threshold = new CheckpointPlanner(sim).curveThreshold();
        Schedule s = new AdaptiveAlgorithm(threshold, 45).schedule(sim);
        assertTrue(s.count() > 0, "the warm-up model would serve to the end: " + s);
        assertTrue(s.detail().contains("FALLBACK"), s.detail());
    }

    @Test
    void adaptiveOnACurveThatNeverFallsPublishesEvenlySpacedAndSaysSo() {
        ScheduleInput flat =
                new ScheduleInput(CurveFamily.LIN2.curve(0, 0.3), 100, 1100, 1000, 0.01, 1e-4, 0.002, 0.01);
        Schedule s = new AdaptiveAlgorithm(0.05, 9).schedule(new CilSimulator(flat));
        assertEquals(9, s.count(), s.toString());
        assertEquals(100, s.checkpoints()[1] - s.checkpoints()[0], s.toString());
        assertTrue(s.detail().startsWith("FALLBACK to 9 evenly spaced"), s.detail());
    }

    @Test
    void adaptiveThatMeetsItsThresholdDoesNotFallBack() {
        ScheduleInput in = new ScheduleInput(CurveFamily.LIN2.curve(-1, 100), 10, 30, 1e6, 1, 1, 1, 1);
        Schedule s = new AdaptiveAlgorithm(2.5, 200).schedule(new CilSimulator(in));
        assertEquals("loss drop > 2.500", s.detail());
    }

    @Test
    void thePlansAdaptiveSpendsItsBudgetWhereTheWarmupsThresholdWouldNot() {
        // drift 2e-4 per iteration: the serving losses fall 0.36 after the warm-up, the warm-up's drops are ~0.03
        WarmupPlan plan = WarmupPlan.of(
                FLAT_AFTER_WARMUP.curve(),
                new WarmupPlan.Run(200, 2000, 3600, 0.005, 1e-4, 0.002, 0.0025),
                c -> new StalenessModel(2e-4));
        Schedule s = plan.schedules(List.of(Algorithm.ADAPTIVE), Set.of(), 45, 40)
                .planned()
                .get(Algorithm.ADAPTIVE);
        assertTrue(s.count() >= 40, s.toString());
        assertTrue(s.detail().contains("lowered to spend the budget"), s.detail());
        double budget = plan.planner().budgetThreshold(45);
        assertTrue(
                budget < plan.planner().curveThreshold(),
                budget + " " + plan.planner().curveThreshold());
    }

    @Test
    void warnsWhenTheFitRisesTheWarmupIsShortAndAPolicyIsFarFromTheBest() {
        ScheduleInput rising =
                new ScheduleInput(CurveFamily.LIN2.curve(0.001, 1), 10, 1000, 1000, 0.01, 1e-4, 0.01, 0.01);
        Map<Algorithm, Schedule> planned = new CheckpointPlanner(rising)
                .plan(Set.of(Algorithm.FIXED), new CheckpointPlanner.Options(10, Double.NaN, 100));
        List<String> w = PlanWarnings.of(rising, 8, 0.01, planned);
        assertTrue(w.stream().anyMatch(x -> x.startsWith("the fitted curve rises after the warm-up")), w.toString());
        assertTrue(w.stream().anyMatch(x -> x.startsWith("only 8 warm-up losses")), w.toString());

        ScheduleInput learns =
                new ScheduleInput(CurveFamily.EXP3.curve(2, 0.002, 0.1), 50, 2000, 1e5, 0.01, 1e-4, 0.001, 1e-3);
        CheckpointPlanner p = new CheckpointPlanner(learns);
        Schedule best = p.schedule(Algorithm.OPTIMAL, new CheckpointPlanner.Options(20, Double.NaN, 1950));
        Schedule rare = p.simulator().schedule("adaptive", new long[] {1900}, "loss drop > 1");
        List<String> far =
                PlanWarnings.of(learns, 50, 0.001, Map.of(Algorithm.OPTIMAL, best, Algorithm.ADAPTIVE, rare));
        assertEquals(1, far.size(), far.toString());
        assertTrue(far.getFirst().startsWith("adaptive's predicted CIL is "), far.toString());
        assertTrue(PlanWarnings.of(learns, 50, 0.001, Map.of(Algorithm.OPTIMAL, best))
                .isEmpty());
    }

    @Test
    void onlinesThresholdFollowsTheMeasuredGapWhenThePredictionIsFarOff() {
        // a gap growing by 2e-3 per iteration of age, no change in the stream: even spacing is right
        int budget = 30;
        OnlineCheckpointPolicy.Config base = OnlineCheckpointPolicy.Config.of(
                new ScheduleInput(CurveFamily.EXP3.curve(2, 0.01, 0.1), 100, 900, 3200, 0.005, 1e-4, 0.002, 0.00125),
                budget);
        double even = 800.0 / (budget + 1);
        for (double off : new double[] {1e-3, 1e3}) {
            OnlineCheckpointPolicy.Config c = new OnlineCheckpointPolicy.Config(
                    base.warmup(),
                    base.end(),
                    base.budget(),
                    base.requestsPerIteration(),
                    base.minSpacing(),
                    base.initialThreshold() * off,
                    base.burst(),
                    base.gain(),
                    base.holdAfterChange(),
                    base.refitEvery());
            OnlineCheckpointPolicyTest.Stream stream = new OnlineCheckpointPolicyTest.Stream(5, 2e-3, 100);
            long[] at = OnlineCheckpointPolicyTest.drive(new OnlineCheckpointPolicy(c, stream), stream, 900).stream()
                    .mapToLong(Long::longValue)
                    .toArray();
            // over the first half of the run, where the steering alone is still far from the pace
            long[] gaps = new long[at.length - 1];
            int n = 0;
            for (int i = 1; i < at.length && at[i] <= 500; i++) {
                gaps[n++] = at[i] - at[i - 1];
            }
            gaps = Arrays.copyOf(gaps, n);
            Arrays.sort(gaps);
            long median = gaps[gaps.length / 2];
            assertTrue(
                    median >= 0.75 * even && median <= 1.3 * even,
                    "initial threshold x" + off + ": median spacing " + median + ", even " + even + ", "
                            + Arrays.toString(at));
        }
    }
}
