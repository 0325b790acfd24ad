package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.CurveFitter;
import io.viper.predictor.LossCurve;
import io.viper.predictor.StalenessModel;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class WarmupPlanTest {
    private static final LossCurve CURVE = CurveFamily.EXP3.curve(2, 0.01, 0.3);
    private static final WarmupPlan.Run RUN = new WarmupPlan.Run(50, 400, 20_000, 0.01, 0.05, 0.02, 0.001);

    @Test
    void aGivenCurveIsPlannedOnAsItIsWithTheDriftOfThatCurve() {
        List<LossCurve> seen = new ArrayList<>();
        WarmupPlan plan = WarmupPlan.of(CURVE, RUN, c -> {
            seen.add(c);
            return new StalenessModel(0.001);
        });
        assertTrue(plan.fit().isEmpty());
        assertEquals(List.of(CURVE), seen);
        ScheduleInput in = plan.input();
        assertSame(CURVE, in.curve());
        assertEquals(0.001, in.staleness().ratePerIteration());
        assertEquals(
                RUN,
                new WarmupPlan.Run(
                        in.warmup(), in.end(), in.inferences(), in.tTrain(), in.tSave(), in.tLoad(), in.tInfer()));
    }

    @Test
    void warmupLossesAreFittedAndTheDriftSeesTheFittedCurve() {
        double[] xs = new double[50];
        double[] ys = new double[xs.length];
        for (int i = 0; i < xs.length; i++) {
            xs[i] = i + 1;
            ys[i] = CURVE.value(xs[i]);
        }
        List<LossCurve> seen = new ArrayList<>();
        WarmupPlan plan = WarmupPlan.fit(xs, ys, RUN, c -> {
            seen.add(c);
            return StalenessModel.NONE;
        });
        assertSame(plan.fit().orElseThrow().curve(), plan.curve());
        assertEquals(List.of(plan.curve()), seen);
        assertEquals(CURVE.value(25), plan.curve().value(25), 1e-3, "the fit follows the losses it was given");
        assertArrayEquals(
                new CurveFitter().fit(xs, ys).curve().params(), plan.curve().params(), "the fitter's curve, as it is");
    }

    @Test
    void eachAlgorithmGetsTheBudgetTheEpochAndAdaptiveTheCurvesThreshold() {
        WarmupPlan plan = WarmupPlan.of(CURVE, RUN, c -> StalenessModel.NONE);
        List<Algorithm> asked = List.of(Algorithm.ADAPTIVE, Algorithm.FIXED, Algorithm.EPOCH);
        WarmupPlan.Schedules s = plan.schedules(asked, Set.of(), 7, 40);
        assertEquals(asked, List.copyOf(s.planned().keySet()));
        assertTrue(s.skipped().isEmpty());
        CheckpointPlanner direct = new CheckpointPlanner(plan.input());
        // adaptive: the curve's threshold, or the lower one that spends the budget on the predicted curve
        double threshold = Math.min(direct.curveThreshold(), direct.budgetThreshold(7));
        CheckpointPlanner.Options options = new CheckpointPlanner.Options(7, threshold, 40);
        for (Algorithm a : asked) {
            assertArrayEquals(
                    direct.schedule(a, options).checkpoints(),
                    s.planned().get(a).checkpoints(),
                    a.displayName());
        }
        assertEquals(7, s.planned().get(Algorithm.FIXED).count());
    }

    @Test
    void anAlgorithmThatCannotRunIsSkippedWithTheReasonUnlessItIsRequired() {
        WarmupPlan.Run oneIteration = new WarmupPlan.Run(1, 400, 20_000, 0.01, 0.05, 0.02, 0.001);
        WarmupPlan plan = WarmupPlan.of(CURVE, oneIteration, c -> StalenessModel.NONE);
        List<Algorithm> asked = List.of(Algorithm.ADAPTIVE, Algorithm.FIXED);
        WarmupPlan.Schedules s = plan.schedules(asked, Set.of(Algorithm.FIXED), 5, 40);
        assertEquals(Set.of(Algorithm.FIXED), s.planned().keySet());
        String why = s.skipped().get(Algorithm.ADAPTIVE);
        assertTrue(why.startsWith("the warm-up end must be at least 2"), why);
        ViperConfigException e = assertThrows(
                ViperConfigException.class, () -> plan.schedules(asked, Set.of(Algorithm.ADAPTIVE), 5, 40));
        assertTrue(e.getMessage().startsWith("adaptive: "), e.getMessage());
    }
}
