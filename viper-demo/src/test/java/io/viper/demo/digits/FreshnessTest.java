package io.viper.demo.digits;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The point of the workload: on the requests of late in the run, a model published late is much better than one
 * published early, staleness by a whole stage is clearly costly, and staleness by a few iterations is nearly free.
 */
class FreshnessTest {
    private static final long E = 2000;
    private static final long[] SNAPSHOTS = {E / 4, E / 2, 3 * E / 4, E - 10, E};
    private static final Map<Long, InferenceModel> MODELS = new HashMap<>();
    private static ContinualDigitsStream stream;

    @BeforeAll
    static void train() {
        Trainer t = Trainer.defaults(E, 42);
        stream = t.stream();
        while (t.iteration() < E) {
            t.step();
            for (long s : SNAPSHOTS) {
                if (t.iteration() == s) {
                    MODELS.put(s, t.snapshot());
                }
            }
        }
    }

    private static ContinualDigitsStream.Evaluation atEnd(long modelIteration) {
        return stream.evaluate(MODELS.get(modelIteration), E);
    }

    @Test
    void aLateModelBeatsAnEarlyModelOnLateRequests() {
        ContinualDigitsStream.Evaluation late = atEnd(E);
        ContinualDigitsStream.Evaluation early = atEnd(E / 4);
        assertTrue(late.accuracy() > 0.9, "late model accuracy " + late.accuracy());
        assertTrue(late.meanLoss() < 0.35, "late model loss " + late.meanLoss());
        assertTrue(
                early.meanLoss() > late.meanLoss() + 1.5, "early " + early.meanLoss() + " vs late " + late.meanLoss());
        assertTrue(
                early.accuracy() < late.accuracy() - 0.4, "early " + early.accuracy() + " vs late " + late.accuracy());
    }

    @Test
    void stalenessCostGrowsWithAgeAndIsSmallForAFewIterations() {
        double fresh = atEnd(E).meanLoss();
        double fewIterations = atEnd(E - 10).meanLoss();
        double oneStage = atEnd(3 * E / 4).meanLoss();
        double twoStages = atEnd(E / 2).meanLoss();
        double threeStages = atEnd(E / 4).meanLoss();
        assertEquals(fresh, fewIterations, 0.05, "10 iterations stale");
        assertTrue(
                oneStage > fresh + 0.5 && oneStage > 3 * fresh, "one stage stale: " + oneStage + " vs fresh " + fresh);
        assertTrue(twoStages > oneStage + 0.3, "two stages " + twoStages + " vs one " + oneStage);
        assertTrue(threeStages > twoStages + 0.3, "three stages " + threeStages + " vs two " + twoStages);
        // bad, not absurd: even three stages stale, the model (31% accurate) beats an untrained one
        double untrained = stream.evaluate(new Mlp(Mlp.Config.defaults(42)), E).meanLoss();
        assertEquals(Math.log(10), untrained, 0.05);
        assertTrue(
                threeStages < untrained + 0.5 && oneStage < untrained - 0.8,
                "three stages stale " + threeStages + ", one stage stale " + oneStage + ", untrained " + untrained);
    }

    @Test
    void sampledRequestsAgreeWithTheExactEvaluation() {
        // the serving path (sampled requests, ServingStats) measures what evaluate() predicts
        for (long m : new long[] {3 * E / 4, E}) {
            ServingStats stats = new ServingStats();
            SplittableRandom rng = new SplittableRandom(m);
            for (int i = 0; i < 4000; i++) {
                stats.serve(MODELS.get(m), m, stream.sampleRequest(E, rng));
            }
            ContinualDigitsStream.Evaluation exact = atEnd(m);
            assertEquals(exact.accuracy(), stats.accuracy(), 0.03, "model " + m);
            assertEquals(exact.meanLoss(), stats.meanLoss(), 0.1 + 0.1 * exact.meanLoss(), "model " + m);
        }
    }
}
