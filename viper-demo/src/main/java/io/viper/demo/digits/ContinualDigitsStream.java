package io.viper.demo.digits;

import io.viper.errors.ViperConfigException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;

/**
 * A deterministic, non-stationary stream of digit images: the continual-learning workload of the Viper demo. Training
 * batches and inference requests are both drawn from a distribution that depends on a <em>position</em>: the training
 * iteration {@code i}, with {@code i / horizon} the progress through the run.
 *
 * <h2>Why this design</h2>
 *
 * Viper decides when publishing a checkpoint pays off. That question only has an interesting answer if a stale model
 * costs something, and if that cost grows with staleness. Two effects are combined:
 *
 * <ol>
 *   <li><b>Class-incremental stages</b> (the big, step-wise effect). Digits arrive in groups; with the default config:
 *       digits 0-3 from the start, 4-5 at 25% of the horizon, 6-7 at 50%, 8-9 at 75%. A model that was published before
 *       a group arrived has never seen those digits and gets every such request wrong, so a model one stage stale is
 *       clearly worse. Once a group has arrived, all seen classes stay equally likely (no class disappears), so the
 *       trainer keeps rehearsing old digits and a fresh model does not forget them. A new group does not switch on at
 *       once: its weight ramps linearly from 0 to that of the other classes over {@link StreamConfig#rampFraction()} of
 *       the horizon, which keeps the training-loss curve continuous (bumps, not cliffs) and lets a fresh model keep up.
 *   <li><b>Gradual rotation drift</b> (the small, continuous effect). Every image, training or request, is rotated
 *       about its centre by {@code maxRotationDegrees * min(1, i / horizon)} (bilinear interpolation, zero outside the
 *       8x8 frame). Handwriting slowly slants; a model from a few iterations ago is only slightly off, a model from far
 *       back sees a visibly rotated digit.
 * </ol>
 *
 * A held-out split ({@link StreamConfig#holdOutFraction()} of each class, default 30%) is never trained on: training
 * batches only ever use the other images, so the server is judged on images the trainer never saw. It is cut in two
 * disjoint halves, as a deployment keeps a validation set apart from its live traffic: alternate held-out images of
 * each digit are the <em>validation</em> half ({@link #sampleValidation}, {@link #evaluateValidation}: all that a
 * checkpoint policy may score a model on), the others the <em>request</em> half ({@link #sampleRequest},
 * {@link #evaluate}: what inference requests are drawn from, and what the serving loss is measured on).
 *
 * <p>Determinism: the split is fixed by the seed; {@link #trainingBatch(long, int)} depends only on the seed and the
 * position (random access, no hidden cursor), so the same position always yields the same batch. Requests are drawn
 * with a caller-supplied {@link RandomGenerator}.
 *
 * <p>Threading: immutable after construction; any thread may call any method concurrently (each call uses only its own
 * random generator and output arrays).
 */
public final class ContinualDigitsStream {
    /** Default class stages: digits 0-3, then 4-5, then 6-7, then 8-9. */
    public static final List<int[]> DEFAULT_STAGES =
            List.of(new int[] {0, 1, 2, 3}, new int[] {4, 5}, new int[] {6, 7}, new int[] {8, 9});

    /**
     * A mini-batch: {@code size} images, row-major, 64 floats each in {@code x}, and their digits. The arrays belong to
     * whoever asked for the batch.
     */
    public record Batch(float[] x, int[] labels, int size) {}

    /**
     * One labelled image.
     *
     * @param x 64 pixel values in [0, 1] after the drift at {@code position} was applied
     * @param label the true digit
     * @param sourceIndex row of the image in {@link DigitsDataset}
     * @param position the stream position it was drawn at
     */
    public record Example(float[] x, int label, int sourceIndex, long position) {}

    /**
     * What requests look like at one position.
     *
     * @param position the stream position
     * @param classProbabilities probability of each digit (index = digit), sums to 1
     * @param rotationDegrees rotation applied to every image at this position
     * @param stage index of the newest stage that has started to arrive
     */
    public record RequestDistribution(long position, double[] classProbabilities, double rotationDegrees, int stage) {}

    /**
     * Expected quality of a classifier on the request distribution at one position, computed exactly over every image
     * of one half of the held-out split (weighted by its class probability), not sampled.
     *
     * @param position the stream position
     * @param meanLoss expected cross-entropy per request
     * @param accuracy expected fraction of correct answers
     */
    public record Evaluation(long position, double meanLoss, double accuracy) {}

    private final StreamConfig config;
    private final DigitsDataset data;
    private final int[][] trainByClass; // dataset rows per class, training split
    private final int[][] validationByClass; // dataset rows per class, validation half of the held-out split
    private final int[][] requestByClass; // dataset rows per class, request half of the held-out split
    private final int[] stageOfClass;
    private final int stageCount;

    /** A stream over the bundled {@link DigitsDataset}. */
    public ContinualDigitsStream(StreamConfig config) {
        this(config, DigitsDataset.load());
    }

    /**
     * A stream over {@code data}.
     *
     * @throws ViperConfigException if a class of {@code data} has too few images to be split
     */
    public ContinualDigitsStream(StreamConfig config, DigitsDataset data) {
        this.config = Objects.requireNonNull(config, "config");
        this.data = Objects.requireNonNull(data, "data");
        List<int[]> stages = config.stages();
        stageCount = stages.size();
        stageOfClass = new int[DigitsDataset.CLASSES];
        for (int s = 0; s < stages.size(); s++) {
            for (int d : stages.get(s)) {
                stageOfClass[d] = s;
            }
        }
        trainByClass = new int[DigitsDataset.CLASSES][];
        validationByClass = new int[DigitsDataset.CLASSES][];
        requestByClass = new int[DigitsDataset.CLASSES][];
        int[] counts = data.labelCounts();
        Random shuffle = new Random(config.seed() ^ 0x5DEECE66DL);
        for (int c = 0; c < DigitsDataset.CLASSES; c++) {
            int[] rows = new int[counts[c]];
            int k = 0;
            for (int i = 0; i < data.size(); i++) {
                if (data.label(i) == c) {
                    rows[k++] = i;
                }
            }
            for (int i = rows.length - 1; i > 0; i--) { // Fisher-Yates
                int j = shuffle.nextInt(i + 1);
                int t = rows[i];
                rows[i] = rows[j];
                rows[j] = t;
            }
            int held = (int) Math.round(rows.length * config.holdOutFraction());
            if (held < 2 || held >= rows.length) {
                throw new ViperConfigException(
                        "stream: digit " + c + " has " + rows.length + " images, too few to hold out "
                                + config.holdOutFraction() + " of them (two at least: validation and requests)"
                                + " and train on the rest");
            }
            int[] heldOut = Arrays.copyOfRange(rows, 0, held);
            trainByClass[c] = Arrays.copyOfRange(rows, held, rows.length);
            Arrays.sort(heldOut);
            Arrays.sort(trainByClass[c]);
            validationByClass[c] = alternate(heldOut, 0);
            requestByClass[c] = alternate(heldOut, 1);
        }
    }

    /** Every other element of {@code rows} from {@code first} on. */
    private static int[] alternate(int[] rows, int first) {
        int[] out = new int[(rows.length - first + 1) / 2];
        for (int k = 0; k < out.length; k++) {
            out[k] = rows[first + 2 * k];
        }
        return out;
    }

    /** The configuration. */
    public StreamConfig config() {
        return config;
    }

    /** The horizon (iterations). */
    public long horizon() {
        return config.horizon();
    }

    /** Number of stages. */
    public int stageCount() {
        return stageCount;
    }

    /** Dataset rows used for training, ascending. */
    public int[] trainingIndices() {
        return concat(trainByClass);
    }

    /** Dataset rows never trained on (the validation and the request half), ascending. */
    public int[] heldOutIndices() {
        return concat(validationByClass, requestByClass);
    }

    /** Dataset rows of the validation half of the held-out split, ascending: all a policy may score a model on. */
    public int[] validationIndices() {
        return concat(validationByClass);
    }

    /** Dataset rows of the request half of the held-out split, ascending: what requests are drawn from. */
    public int[] requestIndices() {
        return concat(requestByClass);
    }

    private static int[] concat(int[][]... byClass) {
        return Arrays.stream(byClass)
                .flatMap(Arrays::stream)
                .flatMapToInt(Arrays::stream)
                .sorted()
                .toArray();
    }

    /** Progress {@code min(1, max(0, position / horizon))}. */
    public double progress(long position) {
        if (position <= 0) {
            return 0;
        }
        return Math.min(1.0, (double) position / config.horizon());
    }

    /** Position at which stage {@code s} starts to arrive: {@code s * horizon / stages}. */
    public long stageStart(int s) {
        Objects.checkIndex(s, stageCount);
        return Math.round((double) s * config.horizon() / stageCount);
    }

    /** Index of the newest stage that has started to arrive at {@code position}. */
    public int stageAt(long position) {
        double p = progress(position);
        int s = (int) Math.floor(p * stageCount + 1e-12);
        return Math.min(s, stageCount - 1);
    }

    /** Rotation (degrees) applied to every image at {@code position}. */
    public double rotationDegreesAt(long position) {
        return config.maxRotationDegrees() * progress(position);
    }

    /** Probability of each digit (index = digit) at {@code position}; sums to 1. */
    public double[] classProbabilitiesAt(long position) {
        double p = progress(position);
        double[] w = new double[DigitsDataset.CLASSES];
        double sum = 0;
        for (int c = 0; c < w.length; c++) {
            w[c] = stageWeight(stageOfClass[c], p);
            sum += w[c];
        }
        for (int c = 0; c < w.length; c++) {
            w[c] /= sum;
        }
        return w;
    }

    private double stageWeight(int stage, double progress) {
        if (stage == 0) {
            return 1.0;
        }
        double start = (double) stage / stageCount;
        if (progress < start) {
            return 0.0;
        }
        double ramp = config.rampFraction();
        return ramp == 0 ? 1.0 : Math.min(1.0, (progress - start) / ramp);
    }

    /** The request distribution at {@code position}. */
    public RequestDistribution requestDistributionAt(long position) {
        return new RequestDistribution(
                position, classProbabilitiesAt(position), rotationDegreesAt(position), stageAt(position));
    }

    /**
     * The mini-batch for training iteration {@code position}: {@code batchSize} images of the training split, digits
     * drawn from {@link #classProbabilitiesAt}, images uniformly within their digit, each rotated by
     * {@link #rotationDegreesAt}. Depends only on the seed, {@code position} and {@code batchSize}.
     */
    public Batch trainingBatch(long position, int batchSize) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize " + batchSize + ", expected >= 1");
        }
        Batch b = new Batch(new float[batchSize * DigitsDataset.PIXELS], new int[batchSize], batchSize);
        fillTrainingBatch(position, b);
        return b;
    }

    /** Fills {@code into} (all {@code into.size()} slots) with the batch for {@code position}. */
    public void fillTrainingBatch(long position, Batch into) {
        SplittableRandom rng = new SplittableRandom(mix(config.seed(), position));
        double[] cdf = cdf(classProbabilitiesAt(position));
        ImageRotation rot = ImageRotation.of(rotationDegreesAt(position));
        float[] raw = new float[DigitsDataset.PIXELS];
        for (int s = 0; s < into.size(); s++) {
            int c = drawClass(cdf, rng.nextDouble());
            int[] rows = trainByClass[c];
            int row = rows[rng.nextInt(rows.length)];
            into.labels()[s] = c;
            data.copyImage(row, raw, 0);
            rot.apply(raw, into.x(), s * DigitsDataset.PIXELS);
        }
    }

    /**
     * One inference request drawn from the distribution at {@code position}: an image of the request half of the
     * held-out split (never trained on, never validated on), rotated by {@link #rotationDegreesAt}.
     */
    public Example sampleRequest(long position, RandomGenerator rng) {
        return draw(requestByClass, position, rng);
    }

    /** {@code n} requests drawn at {@code position} with a generator seeded by {@code seed}. */
    public List<Example> sampleRequests(long position, int n, long seed) {
        return draw(requestByClass, position, n, seed);
    }

    /**
     * One validation image drawn as {@link #sampleRequest} draws a request (the same digit probabilities and rotation),
     * from the validation half of the held-out split: never trained on, never requested.
     */
    public Example sampleValidation(long position, RandomGenerator rng) {
        return draw(validationByClass, position, rng);
    }

    /** {@code n} validation images drawn at {@code position} with a generator seeded by {@code seed}. */
    public List<Example> sampleValidations(long position, int n, long seed) {
        return draw(validationByClass, position, n, seed);
    }

    private List<Example> draw(int[][] byClass, long position, int n, long seed) {
        SplittableRandom rng = new SplittableRandom(seed);
        List<Example> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(draw(byClass, position, rng));
        }
        return out;
    }

    private Example draw(int[][] byClass, long position, RandomGenerator rng) {
        int c = drawClass(cdf(classProbabilitiesAt(position)), rng.nextDouble());
        int[] rows = byClass[c];
        int row = rows[rng.nextInt(rows.length)];
        return example(row, position);
    }

    /** Dataset row {@code row} as it looks at {@code position} (rotated). */
    public Example example(int row, long position) {
        float[] raw = data.image(row);
        float[] x = new float[DigitsDataset.PIXELS];
        ImageRotation.of(rotationDegreesAt(position)).apply(raw, x, 0);
        return new Example(x, data.label(row), row, position);
    }

    /**
     * Exact expected loss and accuracy of {@code model} on the requests at {@code position}: every image of the request
     * half of every digit, weighted by its digit's probability divided by the number of such images of that digit.
     */
    public Evaluation evaluate(DigitClassifier model, long position) {
        return evaluate(requestByClass, model, position);
    }

    /**
     * {@link #evaluate} on the validation half instead of the request half: the same images every time, weighted as the
     * requests draw their digits, where the stream is at {@code position}.
     */
    public Evaluation evaluateValidation(DigitClassifier model, long position) {
        return evaluate(validationByClass, model, position);
    }

    private Evaluation evaluate(int[][] byClass, DigitClassifier model, long position) {
        double[] probs = classProbabilitiesAt(position);
        ImageRotation rot = ImageRotation.of(rotationDegreesAt(position));
        float[] raw = new float[DigitsDataset.PIXELS];
        float[] x = new float[DigitsDataset.PIXELS];
        double loss = 0;
        double acc = 0;
        for (int c = 0; c < DigitsDataset.CLASSES; c++) {
            if (probs[c] == 0) {
                continue;
            }
            int[] rows = byClass[c];
            double w = probs[c] / rows.length;
            for (int row : rows) {
                data.copyImage(row, raw, 0);
                rot.apply(raw, x, 0);
                float[] p = model.predictProba(x);
                loss += w * DigitClassifier.crossEntropy(p, c);
                acc += DigitClassifier.argmax(p) == c ? w : 0;
            }
        }
        return new Evaluation(position, loss, acc);
    }

    private static double[] cdf(double[] p) {
        double[] out = new double[p.length];
        double acc = 0;
        for (int i = 0; i < p.length; i++) {
            acc += p[i];
            out[i] = acc;
        }
        return out;
    }

    private static int drawClass(double[] cdf, double u) {
        double target = u * cdf[cdf.length - 1];
        for (int i = 0; i < cdf.length; i++) {
            if (target < cdf[i]) {
                return i;
            }
        }
        for (int i = cdf.length - 1; i >= 0; i--) { // u*total rounded up to total: last non-empty class
            if (i == 0 || cdf[i] > cdf[i - 1]) {
                return i;
            }
        }
        return 0;
    }

    /** SplitMix64 finaliser over seed and position: independent streams per position. */
    private static long mix(long seed, long position) {
        long z = seed + 0x9E3779B97F4A7C15L * (position + 1);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
