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
 * A deterministic, non-stationary stream of digit images: the continual-learning workload of the
 * Viper demo. Training batches and inference requests are both drawn from a distribution that
 * depends on a <em>position</em>: the training iteration {@code i}, with {@code i / horizon} the
 * progress through the run.
 *
 * <h2>Why this design</h2>
 * Viper decides when publishing a checkpoint pays off. That question only has an interesting answer
 * if a stale model costs something, and if that cost grows with staleness. Two effects are combined:
 * <ol>
 *   <li><b>Class-incremental stages</b> (the big, step-wise effect). Digits arrive in groups; with the
 *       default config: digits 0-3 from the start, 4-5 at 25% of the horizon, 6-7 at 50%, 8-9 at
 *       75%. A model that was published before a group arrived has never seen those digits and gets
 *       every such request wrong, so a model one stage stale is clearly worse. Once a group has
 *       arrived, all seen classes stay equally likely (no class disappears), so the trainer keeps
 *       rehearsing old digits and a fresh model does not forget them. A new group does not switch on at once: its weight ramps linearly
 *       from 0 to that of the other classes over {@link Config#rampFraction()} of the horizon, which
 *       keeps the training-loss curve continuous (bumps, not cliffs) and lets a fresh model keep up.</li>
 *   <li><b>Gradual rotation drift</b> (the small, continuous effect). Every image, training or request,
 *       is rotated about its centre by {@code maxRotationDegrees * min(1, i / horizon)} (bilinear
 *       interpolation, zero outside the 8x8 frame). Handwriting slowly slants; a model from a few
 *       iterations ago is only slightly off, a model from far back sees a visibly rotated digit.</li>
 * </ol>
 * A held-out split ({@link Config#holdOutFraction()} of each class, default 30%) is reserved for
 * requests: training batches only ever use the other images, so the server is judged on images the
 * trainer never saw.
 *
 * <p>Determinism: the split is fixed by the seed; {@link #trainingBatch(long, int)} depends only on the
 * seed and the position (random access, no hidden cursor), so the same position always yields the same
 * batch. Requests are drawn with a caller-supplied {@link RandomGenerator}.
 *
 * <p>Threading: immutable after construction; any thread may call any method concurrently (each call
 * uses only its own random generator and output arrays).
 */
public final class ContinualDigitsStream {
    /** Default class stages: digits 0-3, then 4-5, then 6-7, then 8-9. */
    public static final List<int[]> DEFAULT_STAGES = List.of(new int[] {0, 1, 2, 3}, new int[] {4, 5}, new int[] {6, 7}, new int[] {8, 9});

    /**
     * Configuration.
     *
     * @param horizon number of training iterations over which the distribution changes; positions at or
     *     beyond it see the final distribution (all stages, full rotation)
     * @param stages groups of digits; stage {@code k} of {@code S} starts to arrive at position
     *     {@code k * horizon / S}. Every digit 0..9 appears in exactly one stage. A single stage
     *     holding all digits disables the class-incremental effect.
     * @param rampFraction fraction of the horizon over which a new stage's weight grows from 0 to full
     *     (0 = switch on at once), at most {@code 1 / stages.size()}
     * @param maxRotationDegrees rotation reached at the horizon (0 disables the drift), -90..90
     * @param holdOutFraction fraction of each class reserved for requests, 0.05..0.95
     * @param seed seed of the split and of the training batches
     */
    public record Config(long horizon, List<int[]> stages, double rampFraction, double maxRotationDegrees,
                         double holdOutFraction, long seed) {
        public Config {
            if (horizon < 1) {
                throw new ViperConfigException("stream horizon: " + horizon + ", expected >= 1 iterations");
            }
            Objects.requireNonNull(stages, "stages");
            if (stages.isEmpty()) {
                throw new ViperConfigException("stream stages: empty, expected groups of digits covering 0..9");
            }
            boolean[] seen = new boolean[DigitsDataset.CLASSES];
            List<int[]> copy = new ArrayList<>(stages.size());
            for (int[] stage : stages) {
                if (stage == null || stage.length == 0) {
                    throw new ViperConfigException("stream stages: a stage is empty");
                }
                for (int d : stage) {
                    if (d < 0 || d >= DigitsDataset.CLASSES) {
                        throw new ViperConfigException("stream stages: digit " + d + " is not 0..9");
                    }
                    if (seen[d]) {
                        throw new ViperConfigException("stream stages: digit " + d + " appears in more than one stage");
                    }
                    seen[d] = true;
                }
                copy.add(stage.clone());
            }
            for (int d = 0; d < seen.length; d++) {
                if (!seen[d]) {
                    throw new ViperConfigException("stream stages: digit " + d + " is in no stage");
                }
            }
            stages = List.copyOf(copy);
            if (!(rampFraction >= 0 && rampFraction <= 1.0 / stages.size())) {
                throw new ViperConfigException("stream rampFraction: " + rampFraction + ", expected 0.." + (1.0 / stages.size()));
            }
            if (!(maxRotationDegrees >= -90 && maxRotationDegrees <= 90)) {
                throw new ViperConfigException("stream maxRotationDegrees: " + maxRotationDegrees + ", expected -90..90");
            }
            if (!(holdOutFraction >= 0.05 && holdOutFraction <= 0.95)) {
                throw new ViperConfigException("stream holdOutFraction: " + holdOutFraction + ", expected 0.05..0.95");
            }
        }

        /** {@link #stages()} returns copies so that callers cannot change the config. */
        @Override
        public List<int[]> stages() {
            return stages.stream().map(int[]::clone).toList();
        }

        /** Equal when every component is, stages compared by content. */
        @Override
        public boolean equals(Object o) {
            return o instanceof Config c && horizon == c.horizon && stagesEqual(stages, c.stages)
                    && Double.compare(rampFraction, c.rampFraction) == 0
                    && Double.compare(maxRotationDegrees, c.maxRotationDegrees) == 0
                    && Double.compare(holdOutFraction, c.holdOutFraction) == 0 && seed == c.seed;
        }

        private static boolean stagesEqual(List<int[]> a, List<int[]> b) {
            if (a.size() != b.size()) {
                return false;
            }
            for (int i = 0; i < a.size(); i++) {
                if (!Arrays.equals(a.get(i), b.get(i))) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public int hashCode() {
            int h = Long.hashCode(horizon);
            for (int[] st : stages) {
                h = 31 * h + Arrays.hashCode(st);
            }
            h = 31 * h + Double.hashCode(rampFraction);
            h = 31 * h + Double.hashCode(maxRotationDegrees);
            h = 31 * h + Double.hashCode(holdOutFraction);
            return 31 * h + Long.hashCode(seed);
        }

        @Override
        public String toString() {
            return "Config[horizon=" + horizon + ", stages=" + stages.stream().map(Arrays::toString).toList()
                    + ", rampFraction=" + rampFraction + ", maxRotationDegrees=" + maxRotationDegrees
                    + ", holdOutFraction=" + holdOutFraction + ", seed=" + seed + "]";
        }

        /**
         * The demo defaults over {@code horizon} iterations: {@link #DEFAULT_STAGES}, ramps over 5% of
         * the horizon, 30 degrees of rotation at the end, 30% of each class held out for requests.
         */
        public static Config defaults(long horizon, long seed) {
            return new Config(horizon, DEFAULT_STAGES, 0.05, 30.0, 0.3, seed);
        }

        /**
         * A stream that does not move, Viper's second scenario: every digit from the start, no rotation,
         * 30% of each class held out for requests; only training makes a fresher model better.
         */
        public static Config stationary(long horizon, long seed) {
            return new Config(horizon, List.of(new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}), 0, 0, 0.3, seed);
        }

        /** This config with other stages (the ramp shortened if it no longer fits one stage). */
        public Config withStages(List<int[]> newStages) {
            return new Config(horizon, newStages, Math.min(rampFraction, 1.0 / newStages.size()), maxRotationDegrees, holdOutFraction, seed);
        }

        /** This config with another ramp fraction. */
        public Config withRampFraction(double newRampFraction) {
            return new Config(horizon, stages, newRampFraction, maxRotationDegrees, holdOutFraction, seed);
        }

        /** This config with another final rotation. */
        public Config withMaxRotationDegrees(double degrees) {
            return new Config(horizon, stages, rampFraction, degrees, holdOutFraction, seed);
        }

        /** This config with another horizon. */
        public Config withHorizon(long newHorizon) {
            return new Config(newHorizon, stages, rampFraction, maxRotationDegrees, holdOutFraction, seed);
        }

        /** This config with another seed. */
        public Config withSeed(long newSeed) {
            return new Config(horizon, stages, rampFraction, maxRotationDegrees, holdOutFraction, newSeed);
        }
    }

    /**
     * A mini-batch: {@code size} images, row-major, 64 floats each in {@code x}, and their digits.
     * The arrays belong to whoever asked for the batch.
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
     * Expected quality of a classifier on the request distribution at one position, computed exactly
     * over every held-out image (weighted by its class probability), not sampled.
     *
     * @param position the stream position
     * @param meanLoss expected cross-entropy per request
     * @param accuracy expected fraction of correct answers
     */
    public record Evaluation(long position, double meanLoss, double accuracy) {}

    private final Config config;
    private final DigitsDataset data;
    private final int[][] trainByClass; // dataset rows per class, training split
    private final int[][] requestByClass; // dataset rows per class, held-out split
    private final int[] stageOfClass;
    private final int stageCount;

    /** A stream over the bundled {@link DigitsDataset}. */
    public ContinualDigitsStream(Config config) {
        this(config, DigitsDataset.load());
    }

    /**
     * A stream over {@code data}.
     *
     * @throws ViperConfigException if a class of {@code data} has too few images to be split
     */
    public ContinualDigitsStream(Config config, DigitsDataset data) {
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
            if (held < 1 || held >= rows.length) {
                throw new ViperConfigException("stream: digit " + c + " has " + rows.length
                        + " images, too few to hold out " + config.holdOutFraction() + " of them and train on the rest");
            }
            requestByClass[c] = Arrays.copyOfRange(rows, 0, held);
            trainByClass[c] = Arrays.copyOfRange(rows, held, rows.length);
            Arrays.sort(requestByClass[c]);
            Arrays.sort(trainByClass[c]);
        }
    }

    /** The configuration. */
    public Config config() {
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

    /** Dataset rows held out for requests, ascending. */
    public int[] requestIndices() {
        return concat(requestByClass);
    }

    private static int[] concat(int[][] byClass) {
        return Arrays.stream(byClass).flatMapToInt(Arrays::stream).sorted().toArray();
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
        return new RequestDistribution(position, classProbabilitiesAt(position), rotationDegreesAt(position), stageAt(position));
    }

    /**
     * The mini-batch for training iteration {@code position}: {@code batchSize} images of the training
     * split, digits drawn from {@link #classProbabilitiesAt}, images uniformly within their digit, each
     * rotated by {@link #rotationDegreesAt}. Depends only on the seed, {@code position} and
     * {@code batchSize}.
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
        Rotation rot = Rotation.of(rotationDegreesAt(position));
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
     * One inference request drawn from the distribution at {@code position}: a held-out image (never
     * used for training), rotated by {@link #rotationDegreesAt}.
     */
    public Example sampleRequest(long position, RandomGenerator rng) {
        int c = drawClass(cdf(classProbabilitiesAt(position)), rng.nextDouble());
        int[] rows = requestByClass[c];
        int row = rows[rng.nextInt(rows.length)];
        return example(row, position);
    }

    /** {@code n} requests drawn at {@code position} with a generator seeded by {@code seed}. */
    public List<Example> sampleRequests(long position, int n, long seed) {
        SplittableRandom rng = new SplittableRandom(seed);
        List<Example> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(sampleRequest(position, rng));
        }
        return out;
    }

    /** Dataset row {@code row} as it looks at {@code position} (rotated). */
    public Example example(int row, long position) {
        float[] raw = data.image(row);
        float[] x = new float[DigitsDataset.PIXELS];
        Rotation.of(rotationDegreesAt(position)).apply(raw, x, 0);
        return new Example(x, data.label(row), row, position);
    }

    /**
     * Exact expected loss and accuracy of {@code model} on the requests at {@code position}: every
     * held-out image of every digit, weighted by its digit's probability divided by the number of
     * held-out images of that digit.
     */
    public Evaluation evaluate(DigitClassifier model, long position) {
        double[] probs = classProbabilitiesAt(position);
        Rotation rot = Rotation.of(rotationDegreesAt(position));
        float[] raw = new float[DigitsDataset.PIXELS];
        float[] x = new float[DigitsDataset.PIXELS];
        double loss = 0;
        double acc = 0;
        for (int c = 0; c < DigitsDataset.CLASSES; c++) {
            if (probs[c] == 0) {
                continue;
            }
            int[] rows = requestByClass[c];
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

    /**
     * Rotation of an 8x8 image about its centre (3.5, 3.5), bilinear, zero outside. The sampling plan
     * (four source pixels and weights per output pixel) is computed once per rotation, so that rotating
     * a batch costs 256 multiply-adds per image.
     */
    static final class Rotation {
        private static final int N = DigitsDataset.SIDE;
        private static final int PIXELS = N * N;
        private static final Rotation IDENTITY = new Rotation(null, null);
        private final int[] source; // 4 per output pixel; -1 = outside the frame
        private final float[] weight; // 4 per output pixel

        private Rotation(int[] source, float[] weight) {
            this.source = source;
            this.weight = weight;
        }

        static Rotation of(double degrees) {
            if (degrees == 0) {
                return IDENTITY;
            }
            double rad = Math.toRadians(degrees);
            double sin = Math.sin(rad);
            double cos = Math.cos(rad);
            int[] source = new int[4 * PIXELS];
            float[] weight = new float[4 * PIXELS];
            final double c = (N - 1) / 2.0;
            for (int r = 0; r < N; r++) {
                double y = c - r; // up is positive
                for (int col = 0; col < N; col++) {
                    double x = col - c;
                    // inverse rotation: where does this output pixel come from?
                    double sx = cos * x + sin * y;
                    double sy = -sin * x + cos * y;
                    double srcCol = sx + c;
                    double srcRow = c - sy;
                    int r0 = (int) Math.floor(srcRow);
                    int c0 = (int) Math.floor(srcCol);
                    double fr = srcRow - r0;
                    double fc = srcCol - c0;
                    int k = 4 * (r * N + col);
                    tap(source, weight, k, r0, c0, (1 - fr) * (1 - fc));
                    tap(source, weight, k + 1, r0, c0 + 1, (1 - fr) * fc);
                    tap(source, weight, k + 2, r0 + 1, c0, fr * (1 - fc));
                    tap(source, weight, k + 3, r0 + 1, c0 + 1, fr * fc);
                }
            }
            return new Rotation(source, weight);
        }

        private static void tap(int[] source, float[] weight, int k, int r, int c, double w) {
            boolean inside = r >= 0 && r < N && c >= 0 && c < N;
            source[k] = inside ? r * N + c : -1;
            weight[k] = inside ? (float) w : 0f;
        }

        /** Writes {@code src} (64 values) rotated counter-clockwise into {@code dst[off, off + 64)}. */
        void apply(float[] src, float[] dst, int off) {
            if (source == null) {
                System.arraycopy(src, 0, dst, off, PIXELS);
                return;
            }
            for (int p = 0; p < PIXELS; p++) {
                float v = 0f;
                for (int t = 4 * p; t < 4 * p + 4; t++) {
                    int from = source[t];
                    if (from >= 0) {
                        v += weight[t] * src[from];
                    }
                }
                dst[off + p] = v;
            }
        }
    }
}
