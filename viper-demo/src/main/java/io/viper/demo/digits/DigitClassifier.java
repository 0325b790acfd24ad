package io.viper.demo.digits;

import java.util.Objects;

/**
 * Something that maps an 8x8 digit image (64 floats in [0, 1], row-major) to probabilities of the 10 digits.
 * {@link Mlp} (trainable, single-threaded) and {@link InferenceModel} (read-only, thread-safe) implement it; see each
 * for its threading rules.
 *
 * <p>The loss is the cross-entropy with natural log, with the probability of the true class clamped from below at
 * {@link #MIN_PROBABILITY}: a confident wrong answer costs at most {@code -ln(1e-7) ~= 16.12}, as in Keras' clipped
 * cross-entropy. The clamp keeps a single request of a never-seen class from dominating a cumulative inference loss.
 */
public interface DigitClassifier {
    /** Lower clamp applied to the true-class probability before taking its log. */
    double MIN_PROBABILITY = 1e-7;

    /** Largest loss one request can cost: {@code -ln(MIN_PROBABILITY)}. */
    double MAX_LOSS = -Math.log(MIN_PROBABILITY);

    /**
     * Class probabilities of image {@code x} (length 64): a new array of 10 non-negative values that sum to 1 up to
     * float rounding.
     *
     * @throws IllegalArgumentException if {@code x} does not hold 64 values
     */
    float[] predictProba(float[] x);

    /** The most probable digit for {@code x}; the lowest digit wins a tie. */
    default int predict(float[] x) {
        return argmax(predictProba(x));
    }

    /** Cross-entropy loss of answering {@code x} when its true digit is {@code label}. */
    default double loss(float[] x, int label) {
        return crossEntropy(predictProba(x), label);
    }

    /** Whether {@link #predict} returns {@code label} for {@code x}. */
    default boolean correct(float[] x, int label) {
        return predict(x) == label;
    }

    /** {@code -ln(max(proba[label], MIN_PROBABILITY))}. */
    static double crossEntropy(float[] proba, int label) {
        Objects.checkIndex(label, proba.length);
        return -Math.log(Math.max(proba[label], MIN_PROBABILITY));
    }

    /** Index of the largest value; the lowest index wins a tie. */
    static int argmax(float[] values) {
        int best = 0;
        for (int i = 1; i < values.length; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best;
    }
}
