package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.CheckpointPolicy;
import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.CurveFitter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class PredictedCheckpointPolicyTest {

    static PredictedCheckpointPolicy.Config config(CheckpointPlanner.Algorithm a, long refit) {
        return new PredictedCheckpointPolicy.Config(a, 500, 3000, 3e5, 0.05, 0.4, 1.5, 0.001, refit, 50, 250);
    }

    /** Refits on the calling thread: deterministic. */
    static PredictedCheckpointPolicy synchronous(PredictedCheckpointPolicy.Config c) {
        return new PredictedCheckpointPolicy(c, new CurveFitter(), Runnable::run);
    }

    static List<Long> drive(CheckpointPolicy p, long seed) {
        Random r = new Random(seed);
        List<Long> published = new ArrayList<>();
        for (long i = 1; i <= 3000; i++) {
            double loss = (2.0 * Math.exp(-i / 700.0) + 0.3) * (1 + 0.03 * r.nextGaussian());
            if (p.shouldPublish(i, loss)) {
                published.add(i);
            }
        }
        return published;
    }

    @Test
    void followsThePlanAndRefitsAsLossesArrive() {
        PredictedCheckpointPolicy p = synchronous(config(CheckpointPlanner.Algorithm.OPTIMAL, 500));
        List<Long> published = drive(p, 1);
        assertTrue(published.size() >= 3 && published.size() <= 50, published.toString());
        assertTrue(published.get(0) > 500 && published.get(published.size() - 1) <= 3000, published.toString());
        assertEquals(published.size(), p.publishedCount());
        assertNotNull(p.currentCurve());
        assertTrue(p.describe().startsWith("predicted(optimal"), p.describe());
        // the last plan was made with the curve refitted on all losses up to then; it is close to the truth
        assertEquals(2.0 * Math.exp(-2500 / 700.0) + 0.3, p.currentCurve().value(2500), 0.05);
        // deterministic
        assertEquals(published, drive(synchronous(config(CheckpointPlanner.Algorithm.OPTIMAL, 500)), 1));
    }

    /** A diverging or overflowing step (a NaN or infinite loss, warm-up included) is left out of the fits. */
    @Test
    void nonFiniteLossesAreLeftOutOfTheFits() {
        PredictedCheckpointPolicy p = synchronous(config(CheckpointPlanner.Algorithm.OPTIMAL, 500));
        double[] bad = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY};
        Random r = new Random(1);
        List<Long> published = new ArrayList<>();
        for (long i = 1; i <= 3000; i++) {
            double loss = (2.0 * Math.exp(-i / 700.0) + 0.3) * (1 + 0.03 * r.nextGaussian());
            if (p.shouldPublish(i, i % 40 == 0 ? bad[(int) (i / 40 % 3)] : loss)) {
                published.add(i);
            }
        }
        assertTrue(published.size() >= 3 && published.size() <= 50, published.toString());
        assertEquals(2.0 * Math.exp(-2500 / 700.0) + 0.3, p.currentCurve().value(2500), 0.05);
    }

    @Test
    void firstPlanMatchesThePlannerOnTheWarmUpFit() {
        PredictedCheckpointPolicy p = synchronous(config(CheckpointPlanner.Algorithm.FIXED, 100_000));
        Random r = new Random(2);
        double[] x = new double[500];
        double[] y = new double[500];
        List<Long> published = new ArrayList<>();
        for (long i = 1; i <= 3000; i++) {
            double loss = (2.0 * Math.exp(-i / 700.0) + 0.3) * (1 + 0.03 * r.nextGaussian());
            if (i <= 500) {
                x[(int) i - 1] = i;
                y[(int) i - 1] = loss;
            }
            if (p.shouldPublish(i, loss)) {
                published.add(i);
            }
        }
        // no refit after s (refit interval beyond e): exactly the fixed schedule of the warm-up fit
        var fit = new CurveFitter().fit(x, y);
        Schedule s = new FixedAlgorithm(50)
                .schedule(new CilSimulator(new ScheduleInput(fit.curve(), 500, 3000, 3e5, 0.05, 0.4, 1.5, 0.001)));
        assertEquals(s.checkpoints().length, published.size());
        for (int i = 0; i < published.size(); i++) {
            assertEquals(s.checkpoints()[i], published.get(i));
        }
    }

    @Test
    void startsFromAGivenScheduleAndCatchesUpOnSkippedIterations() {
        Schedule given = new EpochAlgorithm(400)
                .schedule(new CilSimulator(new ScheduleInput(
                        CurveFamily.EXP3.curve(2, 1 / 700.0, 0.3), 500, 3000, 3e5, 0.05, 0.4, 1.5, 0.001)));
        PredictedCheckpointPolicy p = new PredictedCheckpointPolicy(
                config(CheckpointPlanner.Algorithm.EPOCH, 100_000), new CurveFitter(), given);
        assertTrue(!p.shouldPublish(100, 1.0));
        assertTrue(p.shouldPublish(805, 0.9), "800 was planned and skipped over");
        assertTrue(!p.shouldPublish(806, 0.9));
        assertTrue(p.shouldPublish(1200, 0.8));
        assertThrows(ViperConfigException.class, () -> p.shouldPublish(1200, 0.8));
    }

    @Test
    void fallsBackWhenTheFirstFitFails() {
        // only two losses seen by the warm-up end: the fit fails; ten evenly spaced checkpoints instead
        PredictedCheckpointPolicy p = synchronous(config(CheckpointPlanner.Algorithm.OPTIMAL, 100_000));
        p.shouldPublish(1, 2.0);
        p.shouldPublish(500, 1.0);
        assertEquals(10, p.remainingPlan().length);
        assertEquals(750, p.remainingPlan()[0]);
    }

    @Test
    void neverPublishesMoreThanItsBudgetHoweverOftenItReplans() {
        // every re-plan used to get max(1, K - published): one more than the budget each time
        for (CheckpointPlanner.Algorithm a :
                List.of(CheckpointPlanner.Algorithm.OPTIMAL, CheckpointPlanner.Algorithm.FIXED)) {
            PredictedCheckpointPolicy p = synchronous(
                    new PredictedCheckpointPolicy.Config(a, 500, 3000, 3e5, 0.05, 0.4, 1.5, 0.001, 40, 5, 250));
            List<Long> published = drive(p, 3);
            assertTrue(published.size() <= 5, a + ": " + published);
            assertEquals(published.size(), p.publishedCount());
        }
    }

    @Test
    void refitsRunOffTheTrainingThread() {
        List<Runnable> handedOver = new ArrayList<>();
        PredictedCheckpointPolicy p = new PredictedCheckpointPolicy(
                config(CheckpointPlanner.Algorithm.FIXED, 100_000), new CurveFitter(), handedOver::add);
        Random r = new Random(2);
        for (long i = 1; i <= 500; i++) {
            assertTrue(!p.shouldPublish(i, 2.0 * Math.exp(-i / 700.0) + 0.3 + 0.01 * r.nextGaussian()));
        }
        // the training thread only handed the fit over: no plan yet, and it did not wait for one
        assertEquals(1, handedOver.size());
        assertEquals(null, p.currentSchedule());
        assertTrue(!p.shouldPublish(501, 1.0));
        handedOver.getFirst().run(); // the refit thread's work
        p.shouldPublish(502, 1.0);
        assertNotNull(p.currentSchedule(), "the next call adopts the finished plan");
        assertTrue(p.remainingPlan().length > 0 && p.remainingPlan()[0] > 502, Arrays.toString(p.remainingPlan()));
    }

    @Test
    void rejectsBadConfig() {
        assertThrows(
                ViperConfigException.class,
                () -> new PredictedCheckpointPolicy.Config(
                        CheckpointPlanner.Algorithm.OPTIMAL, 500, 3000, 3e5, 0.05, 0.4, 1.5, 0.001, 0, 50, 250));
        assertThrows(
                ViperConfigException.class,
                () -> new PredictedCheckpointPolicy.Config(
                        CheckpointPlanner.Algorithm.OPTIMAL, 500, 400, 3e5, 0.05, 0.4, 1.5, 0.001, 10, 50, 250));
        assertThrows(
                ViperConfigException.class,
                () -> new PredictedCheckpointPolicy.Config(null, 500, 3000, 3e5, 0.05, 0.4, 1.5, 0.001, 10, 50, 250));
    }
}
