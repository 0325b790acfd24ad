package io.viper.demo.digits;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperFormatException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedMap;
import java.util.SplittableRandom;

/**
 * A multi-layer perceptron for 8x8 digits: 64 inputs -> {@code hidden} ReLU units -> 10 softmax outputs, trained with
 * cross-entropy by mini-batch SGD with momentum or Adam. Plain Java on float arrays.
 *
 * <p>Parameters follow PyTorch's {@code nn.Linear} naming and layout, row-major: {@value #DENSE1_WEIGHT} [hidden, 64],
 * {@value #DENSE1_BIAS} [hidden], {@value #DENSE2_WEIGHT} [10, hidden], {@value #DENSE2_BIAS} [10];
 * {@link #parameters()} returns them in that order. They are initialised like PyTorch's default: uniform in
 * {@code [-1/sqrt(fan_in), 1/sqrt(fan_in)]}, drawn from a {@link SplittableRandom} seeded with {@link Config#seed()},
 * so the same config gives the same network, and the same sequence of batches the same parameters, bit for bit.
 *
 * <p>Threading: not thread-safe. One thread (the training loop) owns an {@code Mlp}; it may call {@link #parameters()}
 * or {@link #snapshot()} between steps to hand a copy to other threads. Use {@link InferenceModel} to serve requests
 * from several threads.
 */
public final class Mlp implements DigitClassifier {
    /** Name of the first layer's weight, shape [hidden, 64]. */
    public static final String DENSE1_WEIGHT = "dense1.weight";
    /** Name of the first layer's bias, shape [hidden]. */
    public static final String DENSE1_BIAS = "dense1.bias";
    /** Name of the output layer's weight, shape [10, hidden]. */
    public static final String DENSE2_WEIGHT = "dense2.weight";
    /** Name of the output layer's bias, shape [10]. */
    public static final String DENSE2_BIAS = "dense2.bias";
    /** All parameter names, in the stable order used by {@link #parameters()}. */
    public static final List<String> PARAMETER_NAMES = List.of(DENSE1_WEIGHT, DENSE1_BIAS, DENSE2_WEIGHT, DENSE2_BIAS);

    /** The update rule. */
    public enum Optimizer {
        /** Heavy-ball SGD: {@code v = momentum * v + g; w -= lr * v}. */
        SGD_MOMENTUM,
        /** Adam (Kingma and Ba) with bias correction; {@code momentum} is beta1. */
        ADAM
    }

    /**
     * Hyper-parameters.
     *
     * @param hidden width of the hidden layer (1..4096)
     * @param optimizer update rule
     * @param learningRate step size (> 0)
     * @param momentum SGD momentum, or Adam's beta1 (0 <= momentum < 1)
     * @param beta2 Adam's second-moment decay (0 <= beta2 < 1); unused by SGD
     * @param epsilon Adam's denominator term (> 0); unused by SGD
     * @param labelSmoothing share of the target spread evenly over all 10 digits (0 <= s < 1): the training target is
     *     {@code (1 - s) * onehot + s / 10}. It keeps the network from becoming certain that a digit it has not been
     *     trained on yet is impossible, which bounds the loss a stale model pays for such requests. The loss
     *     {@link #trainBatch} returns is always measured against the true digit alone, like the serving loss.
     * @param seed seed of the weight initialisation
     */
    public record Config(
            int hidden,
            Optimizer optimizer,
            float learningRate,
            float momentum,
            float beta2,
            float epsilon,
            float labelSmoothing,
            long seed) {
        public Config {
            Objects.requireNonNull(optimizer, "optimizer");
            if (hidden < 1 || hidden > 4096) {
                throw new ViperConfigException("mlp hidden: " + hidden + ", expected 1..4096");
            }
            if (!(learningRate > 0f) || Float.isInfinite(learningRate)) {
                throw new ViperConfigException("mlp learningRate: " + learningRate + ", expected a finite value > 0");
            }
            if (!(momentum >= 0f && momentum < 1f)) {
                throw new ViperConfigException("mlp momentum: " + momentum + ", expected 0 <= momentum < 1");
            }
            if (!(beta2 >= 0f && beta2 < 1f)) {
                throw new ViperConfigException("mlp beta2: " + beta2 + ", expected 0 <= beta2 < 1");
            }
            if (!(epsilon > 0f)) {
                throw new ViperConfigException("mlp epsilon: " + epsilon + ", expected > 0");
            }
            if (!(labelSmoothing >= 0f && labelSmoothing < 1f)) {
                throw new ViperConfigException("mlp labelSmoothing: " + labelSmoothing + ", expected 0 <= s < 1");
            }
        }

        /**
         * The demo's defaults: 32 hidden units, Adam with learning rate 0.003, beta1 0.9, beta2 0.999, epsilon 1e-8,
         * label smoothing 0.05. (Measured on the default stream over 3,000 iterations: without smoothing a model one
         * stage stale pays about 11.7 per request of an unseen digit and its mean loss, 2.5, is no better than an
         * untrained model's 2.3 although it is 74% accurate; with 0.05 it pays about 4 and its mean loss is 1.0, while
         * the fresh model's loss goes from 0.15 to 0.18 and its accuracy from 95.2% to 96.7%.)
         */
        public static Config defaults(long seed) {
            return new Config(32, Optimizer.ADAM, 0.003f, 0.9f, 0.999f, 1e-8f, 0.05f, seed);
        }

        /** SGD with momentum 0.9 and learning rate 0.05, 32 hidden units, label smoothing 0.05. */
        public static Config sgd(long seed) {
            return new Config(32, Optimizer.SGD_MOMENTUM, 0.05f, 0.9f, 0.999f, 1e-8f, 0.05f, seed);
        }

        /** This config with another hidden width. */
        public Config withHidden(int newHidden) {
            return new Config(newHidden, optimizer, learningRate, momentum, beta2, epsilon, labelSmoothing, seed);
        }

        /** This config with another learning rate. */
        public Config withLearningRate(float newLearningRate) {
            return new Config(hidden, optimizer, newLearningRate, momentum, beta2, epsilon, labelSmoothing, seed);
        }

        /** This config with another label smoothing. */
        public Config withLabelSmoothing(float newLabelSmoothing) {
            return new Config(hidden, optimizer, learningRate, momentum, beta2, epsilon, newLabelSmoothing, seed);
        }

        /** This config with another seed. */
        public Config withSeed(long newSeed) {
            return new Config(hidden, optimizer, learningRate, momentum, beta2, epsilon, labelSmoothing, newSeed);
        }
    }

    private static final int IN = MlpKernels.IN;
    private static final int OUT = MlpKernels.OUT;

    private final Config config;
    private final int hidden;
    // parameters, in PARAMETER_NAMES order, except that params[0] (and grads[0], m[0], v[0]) hold
    // dense1.weight transposed, [64, hidden], for the vectorised kernels; parameters() transposes back
    private final float[][] params;
    private final float[][] grads;
    private final float[][] m; // momentum / Adam first moment
    private final float[][] v; // Adam second moment (null for SGD)
    private long updates;

    // per-batch scratch, grown on demand
    private float[] hAct = new float[0];
    private float[] probs = new float[0];
    private final float[] dz = new float[OUT];
    private final float[] dh;

    /** A freshly initialised network. */
    public Mlp(Config config) {
        this(config, null);
    }

    private Mlp(Config config, float[][] initial) {
        this.config = Objects.requireNonNull(config, "config");
        this.hidden = config.hidden();
        int[] sizes = {hidden * IN, hidden, OUT * hidden, OUT};
        if (initial != null) {
            initial = initial.clone();
            initial[0] = MlpKernels.transpose(initial[0], hidden, IN);
        }
        params = new float[4][];
        grads = new float[4][];
        m = new float[4][];
        v = config.optimizer() == Optimizer.ADAM ? new float[4][] : null;
        for (int i = 0; i < 4; i++) {
            params[i] = initial == null ? new float[sizes[i]] : initial[i].clone();
            grads[i] = new float[sizes[i]];
            m[i] = new float[sizes[i]];
            if (v != null) {
                v[i] = new float[sizes[i]];
            }
        }
        dh = new float[hidden];
        if (initial == null) {
            SplittableRandom rng = new SplittableRandom(config.seed());
            float[] w1 = new float[hidden * IN]; // drawn in [hidden, 64] order
            initUniform(w1, IN, rng);
            params[0] = MlpKernels.transpose(w1, hidden, IN);
            initUniform(params[1], IN, rng);
            initUniform(params[2], hidden, rng);
            initUniform(params[3], hidden, rng);
        }
    }

    private static void initUniform(float[] a, int fanIn, SplittableRandom rng) {
        double bound = 1.0 / Math.sqrt(fanIn);
        for (int i = 0; i < a.length; i++) {
            a[i] = (float) ((rng.nextDouble() * 2 - 1) * bound);
        }
    }

    /**
     * A trainable network that starts from {@code parameters} (for example a published checkpoint) with fresh optimizer
     * state. The hidden width must match {@code config.hidden()}.
     *
     * @throws ViperFormatException if the parameters are malformed or their hidden width differs
     */
    public static Mlp fromParameters(Map<String, float[]> parameters, Config config) {
        float[][] p = InferenceModel.validate(parameters);
        if (p[1].length != config.hidden()) {
            throw new ViperFormatException(
                    InferenceModel.SOURCE,
                    "hidden width " + p[1].length + " (from " + DENSE1_BIAS + "), but the config asks for "
                            + config.hidden());
        }
        return new Mlp(config, p);
    }

    /** The hyper-parameters. */
    public Config config() {
        return config;
    }

    /** Width of the hidden layer. */
    public int hidden() {
        return hidden;
    }

    /** Number of optimizer updates applied so far (one per {@link #trainBatch} call). */
    public long updates() {
        return updates;
    }

    /** Shapes of the parameters of a network with {@code hidden} hidden units, in stable order. */
    public static SequencedMap<String, long[]> shapes(int hidden) {
        SequencedMap<String, long[]> out = new LinkedHashMap<>();
        out.put(DENSE1_WEIGHT, new long[] {hidden, IN});
        out.put(DENSE1_BIAS, new long[] {hidden});
        out.put(DENSE2_WEIGHT, new long[] {OUT, hidden});
        out.put(DENSE2_BIAS, new long[] {OUT});
        return out;
    }

    /** Shapes of {@link #parameters()}, same order. */
    public SequencedMap<String, long[]> shapes() {
        return shapes(hidden);
    }

    /** Copies of the current parameter arrays, in the order of {@link #PARAMETER_NAMES}. */
    public SequencedMap<String, float[]> parameters() {
        SequencedMap<String, float[]> out = new LinkedHashMap<>();
        out.put(DENSE1_WEIGHT, MlpKernels.transpose(params[0], IN, hidden));
        for (int i = 1; i < 4; i++) {
            out.put(PARAMETER_NAMES.get(i), params[i].clone());
        }
        return out;
    }

    /** Total number of parameters: {@code 64*hidden + hidden + 10*hidden + 10}. */
    public int parameterCount() {
        return params[0].length + params[1].length + params[2].length + params[3].length;
    }

    /** A read-only, thread-safe copy of the current network. */
    public InferenceModel snapshot() {
        return InferenceModel.fromParameters(parameters());
    }

    @Override
    public float[] predictProba(float[] x) {
        checkInput(x);
        float[] h = new float[hidden];
        float[] p = new float[OUT];
        MlpKernels.forward(params[0], params[1], params[2], params[3], hidden, x, 0, h, 0, p, 0);
        return p;
    }

    static void checkInput(float[] x) {
        if (x.length != IN) {
            throw new IllegalArgumentException("image has " + x.length + " values, expected " + IN);
        }
    }

    /**
     * One optimizer step on a mini-batch: forward, cross-entropy averaged over the batch, backward, update.
     *
     * @param x {@code n} images, row-major, 64 values each, in {@code x[0, 64*n)}
     * @param labels their digits, in {@code labels[0, n)}
     * @param n batch size (>= 1)
     * @return the mean loss of the batch before the update (clamped as in {@link DigitClassifier})
     */
    public double trainBatch(float[] x, int[] labels, int n) {
        if (n < 1 || x.length < n * IN || labels.length < n) {
            throw new IllegalArgumentException("batch of " + n + ": needs n >= 1, " + n * IN + " image values (got "
                    + x.length + ") and " + n + " labels (got " + labels.length + ")");
        }
        if (hAct.length < n * hidden) {
            hAct = new float[n * hidden];
            probs = new float[n * OUT];
        }
        final float[] w1t = params[0];
        final float[] b1 = params[1];
        final float[] w2 = params[2];
        final float[] b2 = params[3];
        final float[] gw1t = grads[0];
        final float[] gb1 = grads[1];
        final float[] gw2 = grads[2];
        final float[] gb2 = grads[3];
        for (float[] g : grads) {
            Arrays.fill(g, 0f);
        }
        final float scale = 1f / n;
        final float smooth = config.labelSmoothing() / OUT;
        final float hit = 1f - config.labelSmoothing() + smooth;
        double lossSum = 0;
        for (int s = 0; s < n; s++) {
            int label = labels[s];
            Objects.checkIndex(label, OUT);
            int xOff = s * IN;
            int hOff = s * hidden;
            int pOff = s * OUT;
            MlpKernels.forward(w1t, b1, w2, b2, hidden, x, xOff, hAct, hOff, probs, pOff);
            lossSum += -Math.log(Math.max(probs[pOff + label], MIN_PROBABILITY));
            // d loss / d logits = (p - target) / n, target = (1 - s) * onehot + s / 10
            for (int o = 0; o < OUT; o++) {
                dz[o] = (probs[pOff + o] - (o == label ? hit : smooth)) * scale;
            }
            Arrays.fill(dh, 0f);
            for (int o = 0; o < OUT; o++) {
                float d = dz[o];
                gb2[o] += d;
                int row = o * hidden;
                for (int j = 0; j < hidden; j++) {
                    gw2[row + j] += d * hAct[hOff + j];
                    dh[j] += d * w2[row + j];
                }
            }
            for (int j = 0; j < hidden; j++) {
                if (hAct[hOff + j] <= 0f) {
                    dh[j] = 0f; // ReLU gate
                }
                gb1[j] += dh[j];
            }
            for (int k = 0; k < IN; k++) {
                float xv = x[xOff + k];
                if (xv == 0f) {
                    continue;
                }
                int row = k * hidden;
                for (int j = 0; j < hidden; j++) {
                    gw1t[row + j] += xv * dh[j];
                }
            }
        }
        update();
        return lossSum / n;
    }

    private void update() {
        updates++;
        float lr = config.learningRate();
        float mu = config.momentum();
        if (config.optimizer() == Optimizer.SGD_MOMENTUM) {
            for (int i = 0; i < 4; i++) {
                float[] p = params[i];
                float[] g = grads[i];
                float[] vel = m[i];
                for (int k = 0; k < p.length; k++) {
                    vel[k] = mu * vel[k] + g[k];
                    p[k] -= lr * vel[k];
                }
            }
            return;
        }
        float b2 = config.beta2();
        float eps = config.epsilon();
        double c1 = 1 - Math.pow(mu, (double) updates);
        double c2 = 1 - Math.pow(b2, (double) updates);
        float stepSize = (float) (lr * Math.sqrt(c2) / c1);
        float epsHat = (float) (eps * Math.sqrt(c2));
        for (int i = 0; i < 4; i++) {
            float[] p = params[i];
            float[] g = grads[i];
            float[] m1 = m[i];
            float[] m2 = v[i];
            for (int k = 0; k < p.length; k++) {
                float gk = g[k];
                m1[k] = mu * m1[k] + (1 - mu) * gk;
                m2[k] = b2 * m2[k] + (1 - b2) * gk * gk;
                p[k] -= stepSize * m1[k] / ((float) Math.sqrt(m2[k]) + epsHat);
            }
        }
    }

    @Override
    public String toString() {
        return "Mlp[64 -> " + hidden + " -> 10, " + config.optimizer() + ", " + updates + " updates]";
    }
}
