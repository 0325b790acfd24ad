package io.viper.examples;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SequencedMap;
import java.util.SplittableRandom;

/**
 * The examples' model: a 64 -> 32 ReLU -> 10 network trained by plain SGD on synthetic 8x8 "digits" (ten fixed random
 * images, each sample one of them plus noise). Its four tensors carry the names and shapes of the demo's network and of
 * {@code examples/python/train_publish.py} ({@code dense1.weight} [32, 64], {@code dense1.bias}, {@code dense2.weight}
 * [10, 32], {@code dense2.bias}), so {@link #predict} serves either. Kept small on purpose: the examples show Viper's
 * wiring, not a workload (the demo's is {@code io.viper.demo.digits}).
 *
 * <p>Not thread-safe: one thread calls {@link #step}, {@link #parameters} and {@link #request}; the arrays
 * {@link #parameters} returns are the live weights, which the next {@code step} changes. {@link #predict} is static,
 * keeps no state and only reads the arrays it is given.
 */
public final class ExampleNet {
    static final int IN = 64;
    static final int HIDDEN = 32;
    static final int OUT = 10;
    private static final int BATCH = 32;
    private static final float LEARNING_RATE = 0.1f;
    /** The shape of each tensor, in layout order. */
    public static final Map<String, long[]> SHAPES = shapes();

    private final float[][] prototypes = new float[OUT][IN];
    private final float[] w1 = new float[HIDDEN * IN];
    private final float[] b1 = new float[HIDDEN];
    private final float[] w2 = new float[OUT * HIDDEN];
    private final float[] b2 = new float[OUT];
    private final SplittableRandom rng;

    /** A network with random weights and a task drawn from {@code seed}. */
    public ExampleNet(long seed) {
        rng = new SplittableRandom(seed);
        for (float[] p : prototypes) {
            for (int i = 0; i < IN; i++) {
                p[i] = rng.nextFloat();
            }
        }
        fill(w1, 1 / Math.sqrt(IN));
        fill(w2, 1 / Math.sqrt(HIDDEN));
    }

    private void fill(float[] w, double scale) {
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) ((rng.nextDouble() * 2 - 1) * scale);
        }
    }

    private static Map<String, long[]> shapes() {
        SequencedMap<String, long[]> s = new LinkedHashMap<>();
        s.put("dense1.weight", new long[] {HIDDEN, IN});
        s.put("dense1.bias", new long[] {HIDDEN});
        s.put("dense2.weight", new long[] {OUT, HIDDEN});
        s.put("dense2.bias", new long[] {OUT});
        return Collections.unmodifiableSequencedMap(s);
    }

    /** A request: the image of a random digit of this task (the seed's), with noise. */
    public float[] request(SplittableRandom r) {
        return sample(r.nextInt(OUT), r);
    }

    float[] sample(int digit, SplittableRandom r) {
        float[] x = new float[IN];
        for (int i = 0; i < IN; i++) {
            x[i] = Math.clamp(prototypes[digit][i] + (r.nextFloat() - 0.5f) * 0.6f, 0f, 1f);
        }
        return x;
    }

    /** The live weights by tensor name, in {@link #SHAPES}' order. */
    public Map<String, float[]> parameters() {
        SequencedMap<String, float[]> p = new LinkedHashMap<>();
        p.put("dense1.weight", w1);
        p.put("dense1.bias", b1);
        p.put("dense2.weight", w2);
        p.put("dense2.bias", b2);
        return p;
    }

    /** One SGD step on a batch of fresh samples; returns the batch's mean cross-entropy. */
    public double step() {
        float[] gw1 = new float[w1.length];
        float[] gb1 = new float[HIDDEN];
        float[] gw2 = new float[w2.length];
        float[] gb2 = new float[OUT];
        double loss = 0;
        for (int n = 0; n < BATCH; n++) {
            int y = rng.nextInt(OUT);
            float[] x = sample(y, rng);
            float[] h = hidden(w1, b1, HIDDEN, x);
            float[] p = softmax(logits(w2, b2, HIDDEN, h));
            loss -= Math.log(Math.max(p[y], 1e-12f));
            p[y] -= 1; // now dLoss/dLogits
            float[] dh = new float[HIDDEN];
            for (int o = 0; o < OUT; o++) {
                gb2[o] += p[o];
                for (int j = 0; j < HIDDEN; j++) {
                    gw2[o * HIDDEN + j] += p[o] * h[j];
                    dh[j] += p[o] * w2[o * HIDDEN + j];
                }
            }
            for (int j = 0; j < HIDDEN; j++) {
                if (h[j] <= 0) {
                    continue; // ReLU passes no gradient here
                }
                gb1[j] += dh[j];
                for (int i = 0; i < IN; i++) {
                    gw1[j * IN + i] += dh[j] * x[i];
                }
            }
        }
        descend(w1, gw1);
        descend(b1, gb1);
        descend(w2, gw2);
        descend(b2, gb2);
        return loss / BATCH;
    }

    private static void descend(float[] w, float[] grad) {
        for (int i = 0; i < w.length; i++) {
            w[i] -= LEARNING_RATE / BATCH * grad[i];
        }
    }

    /**
     * The digit a network with these tensors (names as in {@link #SHAPES}, any hidden width) gives {@code x}. Reads the
     * arrays only.
     */
    public static int predict(Map<String, float[]> params, float[] x) {
        float[] b1 = params.get("dense1.bias");
        float[] z = logits(
                params.get("dense2.weight"),
                params.get("dense2.bias"),
                b1.length,
                hidden(params.get("dense1.weight"), b1, b1.length, x));
        int best = 0;
        for (int o = 1; o < z.length; o++) {
            best = z[o] > z[best] ? o : best;
        }
        return best;
    }

    private static float[] hidden(float[] w1, float[] b1, int hidden, float[] x) {
        float[] h = new float[hidden];
        for (int j = 0; j < hidden; j++) {
            float s = b1[j];
            for (int i = 0; i < IN; i++) {
                s += w1[j * IN + i] * x[i];
            }
            h[j] = Math.max(s, 0);
        }
        return h;
    }

    private static float[] logits(float[] w2, float[] b2, int hidden, float[] h) {
        float[] z = new float[b2.length];
        for (int o = 0; o < z.length; o++) {
            float s = b2[o];
            for (int j = 0; j < hidden; j++) {
                s += w2[o * hidden + j] * h[j];
            }
            z[o] = s;
        }
        return z;
    }

    private static float[] softmax(float[] z) {
        float max = Float.NEGATIVE_INFINITY;
        for (float v : z) {
            max = Math.max(max, v);
        }
        float sum = 0;
        for (int o = 0; o < z.length; o++) {
            z[o] = (float) Math.exp(z[o] - max);
            sum += z[o];
        }
        for (int o = 0; o < z.length; o++) {
            z[o] /= sum;
        }
        return z;
    }
}
