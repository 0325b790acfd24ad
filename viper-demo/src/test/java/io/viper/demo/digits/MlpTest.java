package io.viper.demo.digits;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class MlpTest {
    private static final List<int[]> ALL_DIGITS = List.of(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});

    /** A stationary stream: all digits from the start, no rotation. */
    private static ContinualDigitsStream fixedStream(long seed) {
        return new ContinualDigitsStream(
                StreamConfig.defaults(1000, seed).withStages(ALL_DIGITS).withMaxRotationDegrees(0));
    }

    @Test
    void parametersHaveStableNamesShapesAndOrder() {
        Mlp mlp = new Mlp(Mlp.Config.defaults(1));
        Map<String, float[]> p = mlp.parameters();
        assertEquals(
                List.of("dense1.weight", "dense1.bias", "dense2.weight", "dense2.bias"), new ArrayList<>(p.keySet()));
        Map<String, long[]> shapes = mlp.shapes();
        assertEquals(new ArrayList<>(p.keySet()), new ArrayList<>(shapes.keySet()));
        assertArrayEquals(new long[] {32, 64}, shapes.get("dense1.weight"));
        assertArrayEquals(new long[] {32}, shapes.get("dense1.bias"));
        assertArrayEquals(new long[] {10, 32}, shapes.get("dense2.weight"));
        assertArrayEquals(new long[] {10}, shapes.get("dense2.bias"));
        for (String name : p.keySet()) {
            long n = 1;
            for (long dim : shapes.get(name)) {
                n *= dim;
            }
            assertEquals(n, p.get(name).length, name);
        }
        assertEquals(64 * 32 + 32 + 10 * 32 + 10, mlp.parameterCount());
        // PyTorch-style init bound 1/sqrt(fan_in)
        for (float w : p.get("dense1.weight")) {
            assertTrue(Math.abs(w) <= 1 / Math.sqrt(64) + 1e-6);
        }
        for (float w : p.get("dense2.weight")) {
            assertTrue(Math.abs(w) <= 1 / Math.sqrt(32) + 1e-6);
        }
        // parameters() hands out copies
        p.get("dense1.bias")[0] = 1000f;
        assertTrue(mlp.parameters().get("dense1.bias")[0] != 1000f);
    }

    @Test
    void dense1WeightIsRowMajorHiddenByInput() {
        // only dense1.weight[j=2, k=5] is non-zero: hidden unit 2 reads pixel 5 only
        Map<String, float[]> p = new LinkedHashMap<>();
        int hidden = 4;
        float[] w1 = new float[hidden * 64];
        w1[2 * 64 + 5] = 1f;
        p.put("dense1.weight", w1);
        p.put("dense1.bias", new float[hidden]);
        float[] w2 = new float[10 * hidden];
        w2[7 * hidden + 2] = 10f; // logit of digit 7 reads hidden unit 2
        p.put("dense2.weight", w2);
        p.put("dense2.bias", new float[10]);
        InferenceModel m = InferenceModel.fromParameters(p);
        float[] x = new float[64];
        x[5] = 1f;
        assertEquals(7, m.predict(x));
        float[] proba = m.predictProba(x);
        assertEquals(Math.exp(10) / (Math.exp(10) + 9), proba[7], 1e-6);
        x[5] = 0f;
        x[2 * 8 + 5] = 1f; // another pixel: nothing fires, uniform output
        assertEquals(0.1f, m.predictProba(x)[7], 1e-6f);
        assertArrayEquals(w1, m.parameters().get("dense1.weight"));
    }

    @Test
    void trainingReducesTheLossOnAFixedStream() {
        ContinualDigitsStream stream = fixedStream(4);
        Trainer t = new Trainer(stream, new Mlp(Mlp.Config.defaults(4)), 32);
        double before = stream.evaluate(t.model(), 0).meanLoss();
        double first = 0;
        double last = 0;
        for (int i = 0; i < 600; i++) {
            double loss = t.step();
            assertTrue(Double.isFinite(loss));
            if (i < 50) {
                first += loss / 50;
            } else if (i >= 550) {
                last += loss / 50;
            }
        }
        assertEquals(600, t.iteration());
        assertEquals(600, t.model().updates());
        assertTrue(before > 2.0, "untrained held-out loss " + before);
        assertTrue(last < 0.25 * first, "training loss " + first + " -> " + last);
        ContinualDigitsStream.Evaluation after = stream.evaluate(t.model(), 600);
        assertTrue(after.meanLoss() < 0.25, "held-out loss after training " + after.meanLoss());
        assertTrue(after.accuracy() > 0.93, "held-out accuracy after training " + after.accuracy());
    }

    @Test
    void theValidationAndRequestHalvesScoreAlikeOnOtherImages() {
        ContinualDigitsStream stream = new ContinualDigitsStream(StreamConfig.defaults(2000, 6));
        Trainer t = new Trainer(stream, new Mlp(Mlp.Config.defaults(6)), 32);
        for (int i = 0; i < 300; i++) {
            t.step();
        }
        for (long at : new long[] {300, 1800}) { // two digits, then all ten
            double requests = stream.evaluate(t.model(), at).meanLoss();
            double validation = stream.evaluateValidation(t.model(), at).meanLoss();
            assertEquals(requests, validation, 0.25 * requests, "at " + at);
            assertNotEquals(requests, validation, "at " + at + ": other images");
            assertEquals(
                    validation, stream.evaluateValidation(t.model(), at).meanLoss(), 0.0, "the same images every time");
        }
    }

    @Test
    void sgdWithMomentumAlsoLearns() {
        ContinualDigitsStream stream = fixedStream(5);
        Trainer t = new Trainer(stream, new Mlp(Mlp.Config.sgd(5)), 32);
        for (int i = 0; i < 600; i++) {
            t.step();
        }
        ContinualDigitsStream.Evaluation after = stream.evaluate(t.model(), 600);
        assertTrue(after.accuracy() > 0.9, "SGD held-out accuracy " + after.accuracy());
    }

    @Test
    void backPropagationMatchesFiniteDifferences() {
        checkGradient(0f);
    }

    @Test
    void labelSmoothingFollowsTheGradientOfTheSmoothedLoss() {
        checkGradient(0.2f);
    }

    private static void checkGradient(float smoothing) {
        // plain SGD without momentum and lr = 1: one step moves each parameter by minus its gradient
        Mlp.Config cfg = new Mlp.Config(8, Mlp.Optimizer.SGD_MOMENTUM, 1f, 0f, 0.999f, 1e-8f, smoothing, 3);
        ContinualDigitsStream stream = fixedStream(6);
        ContinualDigitsStream.Batch b = stream.trainingBatch(0, 4);
        Mlp probe = new Mlp(cfg);
        Map<String, float[]> p0 = probe.parameters();
        probe.trainBatch(b.x(), b.labels(), b.size());
        Map<String, float[]> p1 = probe.parameters();
        double dot = 0;
        double na = 0;
        double nn = 0;
        for (String name : Mlp.PARAMETER_NAMES) {
            float[] base = p0.get(name);
            for (int i = 0; i < base.length; i += Math.max(1, base.length / 40)) {
                double analytic = base[i] - p1.get(name)[i];
                double h = 1e-2;
                double numeric =
                        (batchLoss(p0, name, i, h, b, smoothing) - batchLoss(p0, name, i, -h, b, smoothing)) / (2 * h);
                dot += analytic * numeric;
                na += analytic * analytic;
                nn += numeric * numeric;
            }
        }
        double cosine = dot / Math.sqrt(na * nn);
        assertTrue(nn > 1e-6, "gradient is not all zero");
        assertTrue(cosine > 0.99, "cosine(analytic, numeric gradient) = " + cosine);
        assertEquals(1.0, Math.sqrt(na / nn), 0.05, "gradient norms");
    }

    /** Mean over the batch of the cross-entropy against the smoothed target. */
    private static double batchLoss(
            Map<String, float[]> params,
            String name,
            int index,
            double delta,
            ContinualDigitsStream.Batch b,
            float smoothing) {
        Map<String, float[]> p = new LinkedHashMap<>();
        params.forEach((k, v) -> p.put(k, v.clone()));
        p.get(name)[index] += (float) delta;
        InferenceModel m = InferenceModel.fromParameters(p);
        double s = 0;
        for (int n = 0; n < b.size(); n++) {
            float[] x = Arrays.copyOfRange(b.x(), n * 64, n * 64 + 64);
            float[] proba = m.predictProba(x);
            double uniform = 0;
            for (float q : proba) {
                uniform -= Math.log(q) / 10;
            }
            s += (1 - smoothing) * -Math.log(proba[b.labels()[n]]) + smoothing * uniform;
        }
        return s / b.size();
    }

    @Test
    void sameSeedGivesIdenticalLossesAndParameters() {
        Trainer a = Trainer.defaults(400, 21);
        Trainer b = Trainer.defaults(400, 21);
        Trainer c = Trainer.defaults(400, 22);
        boolean anyDifferent = false;
        for (int i = 0; i < 400; i++) {
            double la = a.step();
            assertEquals(
                    Double.doubleToRawLongBits(la), Double.doubleToRawLongBits(b.step()), "loss at iteration " + i);
            anyDifferent |= la != c.step();
        }
        assertTrue(anyDifferent, "another seed gives another run");
        Map<String, float[]> pa = a.model().parameters();
        Map<String, float[]> pb = b.model().parameters();
        Map<String, float[]> pc = c.model().parameters();
        for (String name : Mlp.PARAMETER_NAMES) {
            assertArrayEquals(pa.get(name), pb.get(name), name);
        }
        assertFalse(Arrays.equals(pa.get("dense1.weight"), pc.get("dense1.weight")));
    }

    @Test
    void inferenceModelPredictsExactlyLikeTheTrainedMlp() throws Exception {
        Trainer t = Trainer.defaults(300, 8);
        for (int i = 0; i < 300; i++) {
            t.step();
        }
        Mlp mlp = t.model();
        InferenceModel inf = InferenceModel.fromParameters(mlp.parameters(), mlp.shapes());
        InferenceModel snap = t.snapshot();
        Mlp copy = Mlp.fromParameters(mlp.parameters(), mlp.config());
        ContinualDigitsStream s = t.stream();
        for (int row : s.requestIndices()) {
            float[] x = s.example(row, 300).x();
            float[] expected = mlp.predictProba(x);
            assertArrayEquals(expected, inf.predictProba(x));
            assertArrayEquals(expected, snap.predictProba(x));
            assertArrayEquals(expected, copy.predictProba(x));
            assertEquals(
                    mlp.loss(x, s.example(row, 0).label()),
                    inf.loss(x, s.example(row, 0).label()));
            assertEquals(mlp.correct(x, 3), inf.correct(x, 3));
        }
        for (String name : Mlp.PARAMETER_NAMES) {
            assertArrayEquals(mlp.parameters().get(name), inf.parameters().get(name), name);
        }
        // training the Mlp further does not change the snapshot
        float[] x = s.example(s.requestIndices()[0], 300).x();
        float[] before = snap.predictProba(x);
        t.step();
        assertArrayEquals(before, snap.predictProba(x));

        // concurrent predictions on one InferenceModel agree with single-threaded ones
        int[] rows = s.requestIndices();
        List<float[]> inputs = new ArrayList<>();
        List<float[]> expected = new ArrayList<>();
        for (int row : rows) {
            float[] xi = s.example(row, 300).x();
            inputs.add(xi);
            expected.add(inf.predictProba(xi));
        }
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<Integer>> results = new ArrayList<>();
            for (int th = 0; th < 4; th++) {
                results.add(pool.submit(() -> {
                    int mismatches = 0;
                    for (int rep = 0; rep < 5; rep++) {
                        for (int i = 0; i < inputs.size(); i++) {
                            if (!Arrays.equals(expected.get(i), inf.predictProba(inputs.get(i)))) {
                                mismatches++;
                            }
                        }
                    }
                    return mismatches;
                }));
            }
            for (Future<Integer> f : results) {
                assertEquals(0, f.get());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void lossIsClampedCrossEntropy() {
        float[] proba = {0.5f, 0.25f, 0.25f, 0f, 0f, 0f, 0f, 0f, 0f, 0f};
        assertEquals(Math.log(2), DigitClassifier.crossEntropy(proba, 0), 1e-7);
        assertEquals(-Math.log(1e-7), DigitClassifier.crossEntropy(proba, 5), 1e-9);
        assertEquals(DigitClassifier.MAX_LOSS, DigitClassifier.crossEntropy(proba, 9));
        assertEquals(0, DigitClassifier.argmax(proba));
    }

    @Test
    void malformedParametersAreRejectedNamingTheTensor() {
        Map<String, float[]> good = new Mlp(Mlp.Config.defaults(1)).parameters();

        Map<String, float[]> missing = new LinkedHashMap<>(good);
        missing.remove("dense2.bias");
        ViperFormatException e1 =
                assertThrows(ViperFormatException.class, () -> InferenceModel.fromParameters(missing));
        assertTrue(e1.getMessage().contains("missing tensor 'dense2.bias'"), e1.getMessage());

        Map<String, float[]> extra = new LinkedHashMap<>(good);
        extra.put("dense3.weight", new float[1]);
        ViperFormatException e2 = assertThrows(ViperFormatException.class, () -> InferenceModel.fromParameters(extra));
        assertTrue(e2.getMessage().contains("unknown tensor 'dense3.weight'"), e2.getMessage());

        Map<String, float[]> shortW = new LinkedHashMap<>(good);
        shortW.put("dense2.weight", new float[10 * 31]);
        ViperFormatException e3 = assertThrows(ViperFormatException.class, () -> InferenceModel.fromParameters(shortW));
        assertTrue(e3.getMessage().contains("dense2.weight: 310 values, expected 320"), e3.getMessage());

        Map<String, long[]> badShapes = new LinkedHashMap<>(Mlp.shapes(32));
        badShapes.put("dense1.weight", new long[] {64, 32});
        ViperFormatException e4 =
                assertThrows(ViperFormatException.class, () -> InferenceModel.fromParameters(good, badShapes));
        assertTrue(e4.getMessage().contains("dense1.weight: shape [64, 32], expected [32, 64]"), e4.getMessage());

        ViperFormatException e5 = assertThrows(
                ViperFormatException.class,
                () -> Mlp.fromParameters(good, Mlp.Config.defaults(1).withHidden(16)));
        assertTrue(e5.getMessage().contains("hidden width 32"), e5.getMessage());

        InferenceModel m = InferenceModel.fromParameters(good);
        assertThrows(IllegalArgumentException.class, () -> m.predictProba(new float[63]));
        assertThrows(ViperConfigException.class, () -> Mlp.Config.defaults(1).withLearningRate(0f));
        assertThrows(ViperConfigException.class, () -> Mlp.Config.defaults(1).withHidden(0));
    }

    @Test
    void inferenceModelCopiesItsInput() {
        Map<String, float[]> p = new Mlp(Mlp.Config.defaults(2)).parameters();
        InferenceModel m = InferenceModel.fromParameters(p);
        float[] x = DigitsDataset.load().image(0);
        float[] before = m.predictProba(x);
        p.get("dense2.bias")[0] += 100f;
        assertArrayEquals(before, m.predictProba(x));
    }
}
