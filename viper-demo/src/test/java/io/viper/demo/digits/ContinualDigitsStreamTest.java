package io.viper.demo.digits;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class ContinualDigitsStreamTest {
    private static final long E = 2000;
    private final ContinualDigitsStream stream = new ContinualDigitsStream(StreamConfig.defaults(E, 11));

    @Test
    void holdOutSplitIsDisjointStratifiedAndCoversTheDataSet() {
        int[] train = stream.trainingIndices();
        int[] req = stream.heldOutIndices();
        assertEquals(1797, train.length + req.length);
        Set<Integer> all = new HashSet<>();
        for (int i : train) {
            all.add(i);
        }
        for (int i : req) {
            assertTrue(all.add(i), "row " + i + " is in both splits");
        }
        assertEquals(1797, all.size());
        assertEquals(0.3, req.length / 1797.0, 0.01);
        DigitsDataset d = DigitsDataset.load();
        int[] perClass = new int[10];
        for (int i : req) {
            perClass[d.label(i)]++;
        }
        int[] counts = d.labelCounts();
        for (int c = 0; c < 10; c++) {
            assertEquals(Math.round(counts[c] * 0.3), perClass[c], "held-out rows of digit " + c);
        }
        // another seed, another split
        int[] other = new ContinualDigitsStream(StreamConfig.defaults(E, 12)).heldOutIndices();
        assertFalse(Arrays.equals(req, other));
    }

    @Test
    void theHeldOutSplitIsCutIntoDisjointValidationAndRequestHalves() {
        int[] validation = stream.validationIndices();
        int[] requests = stream.requestIndices();
        Set<Integer> seen = new HashSet<>();
        for (int i : validation) {
            seen.add(i);
        }
        for (int i : requests) {
            assertTrue(seen.add(i), "row " + i + " is both a validation and a request image");
        }
        assertEquals(
                Arrays.stream(stream.heldOutIndices()).boxed().collect(Collectors.toSet()),
                seen,
                "together the held-out split");
        DigitsDataset d = DigitsDataset.load();
        int[] perClass = new int[10];
        for (int i : validation) {
            perClass[d.label(i)]++;
        }
        for (int i : requests) {
            perClass[d.label(i)]--;
        }
        for (int c = 0; c < 10; c++) {
            assertTrue(perClass[c] == 0 || perClass[c] == 1, "digit " + c + " split in halves: " + perClass[c]);
        }
        // what is drawn from each half stays in it
        Set<Integer> validationRows = Arrays.stream(validation).boxed().collect(Collectors.toSet());
        Set<Integer> requestRows = Arrays.stream(requests).boxed().collect(Collectors.toSet());
        SplittableRandom rng = new SplittableRandom(8);
        Set<Integer> drawnForValidation = new HashSet<>();
        for (int k = 0; k < 4000; k++) {
            long at = rng.nextLong(E + 100);
            assertTrue(requestRows.contains(stream.sampleRequest(at, rng).sourceIndex()), "a request");
            int v = stream.sampleValidation(at, rng).sourceIndex();
            assertTrue(validationRows.contains(v), "a validation image");
            drawnForValidation.add(v);
        }
        for (ContinualDigitsStream.Example e : stream.sampleValidations(E, 500, 3)) {
            assertTrue(validationRows.contains(e.sourceIndex()));
        }
        for (ContinualDigitsStream.Example e : stream.sampleRequests(E, 500, 3)) {
            assertTrue(requestRows.contains(e.sourceIndex()));
        }
        assertTrue(drawnForValidation.size() > 0.9 * validation.length, "the whole half is drawn from");
    }

    @Test
    void requestsComeOnlyFromTheHeldOutSplitAndBatchesOnlyFromTraining() {
        Set<Integer> held = new HashSet<>();
        for (int i : stream.requestIndices()) {
            held.add(i);
        }
        SplittableRandom rng = new SplittableRandom(3);
        for (int k = 0; k < 2000; k++) {
            ContinualDigitsStream.Example ex = stream.sampleRequest(rng.nextLong(E + 100), rng);
            assertTrue(held.contains(ex.sourceIndex()));
            assertEquals(DigitsDataset.load().label(ex.sourceIndex()), ex.label());
        }
        // at position 0 there is no rotation, so batch images are dataset images: find each among training rows
        Set<String> trainImages = new HashSet<>();
        for (int i : stream.trainingIndices()) {
            trainImages.add(Arrays.toString(DigitsDataset.load().image(i)));
        }
        ContinualDigitsStream.Batch b = stream.trainingBatch(0, 256);
        for (int s = 0; s < b.size(); s++) {
            float[] img = Arrays.copyOfRange(b.x(), s * 64, s * 64 + 64);
            assertTrue(trainImages.contains(Arrays.toString(img)), "batch image " + s + " is not a training image");
        }
    }

    @Test
    void theStationaryStreamLooksTheSameFromStartToEnd() {
        ContinualDigitsStream still = new ContinualDigitsStream(StreamConfig.stationary(E, 11));
        assertArrayEquals(still.classProbabilitiesAt(0), still.classProbabilitiesAt(E), 0.0);
        assertEquals(0.1, still.classProbabilitiesAt(E / 2)[9], 1e-12, "every digit from the start");
        assertEquals(0.0, still.rotationDegreesAt(E), 0.0);
        assertEquals(1, still.stageCount());
        assertArrayEquals(
                stream.heldOutIndices(),
                still.heldOutIndices(),
                "the same held-out split as the staged stream of that seed");
    }

    @Test
    void batchesAreAFunctionOfSeedAndPosition() {
        ContinualDigitsStream same = new ContinualDigitsStream(StreamConfig.defaults(E, 11));
        for (long pos : new long[] {0, 1, 777, 1999, 5000}) {
            ContinualDigitsStream.Batch a = stream.trainingBatch(pos, 32);
            ContinualDigitsStream.Batch b = same.trainingBatch(pos, 32);
            assertArrayEquals(a.x(), b.x());
            assertArrayEquals(a.labels(), b.labels());
        }
        assertFalse(Arrays.equals(
                stream.trainingBatch(5, 32).x(), stream.trainingBatch(6, 32).x()));
        ContinualDigitsStream otherSeed = new ContinualDigitsStream(StreamConfig.defaults(E, 99));
        assertFalse(Arrays.equals(
                stream.trainingBatch(5, 32).labels(),
                otherSeed.trainingBatch(5, 32).labels()));
    }

    @Test
    void classesArriveInStagesWithRamps() {
        double[] start = stream.classProbabilitiesAt(0);
        for (int c = 0; c < 10; c++) {
            assertEquals(c < 4 ? 0.25 : 0.0, start[c], 1e-12, "digit " + c + " at the start");
        }
        assertEquals(0, stream.stageAt(0));
        assertEquals(1, stream.stageAt(E / 4));
        assertEquals(3, stream.stageAt(E));
        // halfway up the ramp of stage 1 (ramp = 5% of E = 100 iterations): digits 4, 5 at half weight
        double[] mid = stream.classProbabilitiesAt(E / 4 + 50);
        assertEquals(0.5 / 5.0, mid[4], 1e-12);
        assertEquals(1.0 / 5.0, mid[0], 1e-12);
        assertEquals(0.0, mid[6]);
        double[] end = stream.classProbabilitiesAt(E);
        for (int c = 0; c < 10; c++) {
            assertEquals(0.1, end[c], 1e-12);
        }
        assertArrayEquals(end, stream.classProbabilitiesAt(10 * E), "beyond the horizon the distribution stays final");
        for (long pos = 0; pos <= E; pos += 37) {
            assertEquals(1.0, Arrays.stream(stream.classProbabilitiesAt(pos)).sum(), 1e-12);
        }
    }

    @Test
    void sampledRequestLabelHistogramsDifferBetweenStartAndEnd() {
        int n = 4000;
        int[] early = histogram(stream.sampleRequests(10, n, 5));
        int[] late = histogram(stream.sampleRequests(E - 1, n, 5));
        for (int c = 4; c < 10; c++) {
            assertEquals(0, early[c], "digit " + c + " must not be requested at the start");
        }
        for (int c = 0; c < 4; c++) {
            assertEquals(n / 4.0, early[c], n * 0.03);
        }
        for (int c = 0; c < 10; c++) {
            assertEquals(n / 10.0, late[c], n * 0.025, "digit " + c + " at the end");
        }
        // total variation distance between the two label distributions: 0.6 in expectation
        double tv = 0;
        for (int c = 0; c < 10; c++) {
            tv += Math.abs(early[c] - late[c]) / (double) n;
        }
        assertTrue(tv / 2 > 0.55, "total variation " + tv / 2);
    }

    private static int[] histogram(List<ContinualDigitsStream.Example> examples) {
        int[] h = new int[10];
        for (ContinualDigitsStream.Example e : examples) {
            h[e.label()]++;
        }
        return h;
    }

    @Test
    void imagesRotateGraduallyOverTheHorizon() {
        assertEquals(0.0, stream.rotationDegreesAt(0));
        assertEquals(15.0, stream.rotationDegreesAt(E / 2), 1e-9);
        assertEquals(30.0, stream.rotationDegreesAt(E), 1e-9);
        assertEquals(30.0, stream.rotationDegreesAt(3 * E), 1e-9);
        int row = stream.requestIndices()[0];
        float[] original = DigitsDataset.load().image(row);
        assertArrayEquals(original, stream.example(row, 0).x());
        double d1 = distance(original, stream.example(row, 20).x());
        double dHalf = distance(original, stream.example(row, E / 2).x());
        double dEnd = distance(original, stream.example(row, E).x());
        assertTrue(d1 > 0 && d1 < dHalf && dHalf < dEnd, d1 + " " + dHalf + " " + dEnd);
        // a 90-degree rotation moves a pixel exactly: top-left corner goes to bottom-left
        float[] dot = new float[64];
        dot[0] = 1f; // row 0, column 0
        float[] out = new float[64];
        ImageRotation.of(90).apply(dot, out, 0);
        assertEquals(1f, out[7 * 8], 1e-6f);
        assertEquals(1f, sum(out), 1e-5f);
    }

    private static double distance(float[] a, float[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += (a[i] - b[i]) * (a[i] - b[i]);
        }
        return Math.sqrt(s);
    }

    private static float sum(float[] a) {
        float s = 0;
        for (float v : a) {
            s += v;
        }
        return s;
    }

    @Test
    void requestDistributionDescribesThePosition() {
        ContinualDigitsStream.RequestDistribution rd = stream.requestDistributionAt(3 * E / 4 + 10);
        assertEquals(3, rd.stage());
        assertEquals(22.5 + 0.15, rd.rotationDegrees(), 1e-9);
        assertTrue(rd.classProbabilities()[8] > 0 && rd.classProbabilities()[8] < 0.1);
    }

    @Test
    void invalidConfigsAreRejectedWithTheirKey() {
        assertThrows(ViperConfigException.class, () -> StreamConfig.defaults(0, 1));
        StreamConfig ok = StreamConfig.defaults(100, 1);
        ViperConfigException missing = assertThrows(
                ViperConfigException.class,
                () -> ok.withStages(List.of(new int[] {0, 1, 2}, new int[] {3, 4, 5, 6, 7, 8})));
        assertTrue(missing.getMessage().contains("digit 9 is in no stage"), missing.getMessage());
        ViperConfigException dup = assertThrows(
                ViperConfigException.class,
                () -> ok.withStages(List.of(new int[] {0, 1, 2, 3, 4}, new int[] {4, 5, 6, 7, 8, 9})));
        assertTrue(dup.getMessage().contains("digit 4 appears in more than one stage"), dup.getMessage());
        assertThrows(ViperConfigException.class, () -> ok.withMaxRotationDegrees(120));
        assertThrows(ViperConfigException.class, () -> ok.withRampFraction(0.5));
        assertThrows(IllegalArgumentException.class, () -> stream.trainingBatch(0, 0));
    }

    @Test
    void configsCompareStagesByContent() {
        StreamConfig a = StreamConfig.defaults(100, 1);
        StreamConfig b = StreamConfig.defaults(100, 1)
                .withStages(List.of(new int[] {0, 1, 2, 3}, new int[] {4, 5}, new int[] {6, 7}, new int[] {8, 9}));
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertFalse(a.equals(a.withSeed(2)));
        assertFalse(a.equals(a.withStages(List.of(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}))));
        a.stages().get(0)[0] = 9; // a copy: the config is unchanged
        assertEquals(0, a.stages().get(0)[0]);
    }

    @Test
    void aSingleStageWithoutRotationIsStationary() {
        ContinualDigitsStream flat = new ContinualDigitsStream(StreamConfig.defaults(E, 1)
                .withStages(List.of(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}))
                .withMaxRotationDegrees(0));
        assertArrayEquals(flat.classProbabilitiesAt(0), flat.classProbabilitiesAt(E));
        assertEquals(0.0, flat.rotationDegreesAt(E));
        assertEquals(1, flat.stageCount());
    }
}
