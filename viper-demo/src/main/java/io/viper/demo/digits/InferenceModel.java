package io.viper.demo.digits;

import io.viper.errors.ViperFormatException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.SequencedMap;

/**
 * A read-only {@link Mlp} built from its parameter arrays: what an inference server holds. It copies the arrays it is
 * given and never changes them, so any number of threads may call {@link #predictProba}, {@link #loss} and
 * {@link #correct} on one instance at the same time without locking (each call allocates its own small scratch arrays).
 *
 * <p>For the same parameter values it returns bit-identical probabilities to {@link Mlp#predictProba}.
 */
public final class InferenceModel implements DigitClassifier {
    private final int hidden;
    private final float[] w1t; // dense1.weight transposed: [64, hidden]
    private final float[] b1;
    private final float[] w2;
    private final float[] b2;

    private InferenceModel(int hidden, float[] w1t, float[] b1, float[] w2, float[] b2) {
        this.hidden = hidden;
        this.w1t = w1t;
        this.b1 = b1;
        this.w2 = w2;
        this.b2 = b2;
    }

    /**
     * Builds a model from the four named arrays {@value Mlp#DENSE1_WEIGHT} [hidden, 64], {@value Mlp#DENSE1_BIAS}
     * [hidden], {@value Mlp#DENSE2_WEIGHT} [10, hidden] and {@value Mlp#DENSE2_BIAS} [10], row-major, as returned by
     * {@link Mlp#parameters()}. The hidden width is read from the length of {@value Mlp#DENSE1_BIAS}. The arrays are
     * copied.
     *
     * @throws ViperFormatException if a name is missing or unknown, or an array has the wrong length
     */
    public static InferenceModel fromParameters(Map<String, float[]> parameters) {
        float[][] p = validate(parameters);
        int hidden = p[1].length;
        return new InferenceModel(
                hidden, MlpKernels.transpose(p[0], hidden, MlpKernels.IN), p[1].clone(), p[2].clone(), p[3].clone());
    }

    /**
     * Like {@link #fromParameters(Map)}, and also checks that {@code shapes} (for example read from a checkpoint
     * manifest) gives each tensor the shape this network needs.
     *
     * @throws ViperFormatException if a shape is missing or differs from {@link Mlp#shapes(int)}
     */
    public static InferenceModel fromParameters(Map<String, float[]> parameters, Map<String, long[]> shapes) {
        InferenceModel model = fromParameters(parameters);
        Objects.requireNonNull(shapes, "shapes");
        for (Map.Entry<String, long[]> e : Mlp.shapes(model.hidden).entrySet()) {
            long[] given = shapes.get(e.getKey());
            if (given == null) {
                throw new ViperFormatException(SOURCE, e.getKey() + ": no shape given");
            }
            if (!Arrays.equals(given, e.getValue())) {
                throw new ViperFormatException(
                        SOURCE,
                        e.getKey() + ": shape " + Arrays.toString(given) + ", expected "
                                + Arrays.toString(e.getValue()));
            }
        }
        return model;
    }

    static final String SOURCE = "mlp parameters";

    /**
     * Checks names and lengths; returns the arrays (not copied) in the order dense1.weight, dense1.bias, dense2.weight,
     * dense2.bias.
     */
    static float[][] validate(Map<String, float[]> parameters) {
        Objects.requireNonNull(parameters, "parameters");
        for (String name : parameters.keySet()) {
            if (!Mlp.PARAMETER_NAMES.contains(name)) {
                throw new ViperFormatException(
                        SOURCE, "unknown tensor '" + name + "', expected " + Mlp.PARAMETER_NAMES);
            }
        }
        float[][] out = new float[4][];
        for (int i = 0; i < 4; i++) {
            String name = Mlp.PARAMETER_NAMES.get(i);
            out[i] = parameters.get(name);
            if (out[i] == null) {
                throw new ViperFormatException(SOURCE, "missing tensor '" + name + "'");
            }
        }
        int hidden = out[1].length;
        if (hidden < 1) {
            throw new ViperFormatException(
                    SOURCE, Mlp.DENSE1_BIAS + ": empty, expected the hidden width (>= 1) values");
        }
        checkLength(Mlp.DENSE1_WEIGHT, out[0], (long) hidden * MlpKernels.IN, hidden + " x " + MlpKernels.IN);
        checkLength(Mlp.DENSE2_WEIGHT, out[2], (long) MlpKernels.OUT * hidden, MlpKernels.OUT + " x " + hidden);
        checkLength(Mlp.DENSE2_BIAS, out[3], MlpKernels.OUT, Integer.toString(MlpKernels.OUT));
        return out;
    }

    private static void checkLength(String name, float[] values, long expected, String shape) {
        if (values.length != expected) {
            throw new ViperFormatException(
                    SOURCE,
                    name + ": " + values.length + " values, expected " + expected + " (" + shape
                            + ", hidden width taken from " + Mlp.DENSE1_BIAS + ")");
        }
    }

    /** Width of the hidden layer. */
    public int hidden() {
        return hidden;
    }

    /** Copies of the parameter arrays, in the stable order of {@link Mlp#PARAMETER_NAMES}. */
    public SequencedMap<String, float[]> parameters() {
        SequencedMap<String, float[]> out = new LinkedHashMap<>();
        out.put(Mlp.DENSE1_WEIGHT, MlpKernels.transpose(w1t, MlpKernels.IN, hidden));
        out.put(Mlp.DENSE1_BIAS, b1.clone());
        out.put(Mlp.DENSE2_WEIGHT, w2.clone());
        out.put(Mlp.DENSE2_BIAS, b2.clone());
        return out;
    }

    /** Shapes of {@link #parameters()}, same order. */
    public SequencedMap<String, long[]> shapes() {
        return Mlp.shapes(hidden);
    }

    @Override
    public float[] predictProba(float[] x) {
        Mlp.checkInput(x);
        float[] h = new float[hidden];
        float[] p = new float[MlpKernels.OUT];
        MlpKernels.forward(w1t, b1, w2, b2, hidden, x, 0, h, 0, p, 0);
        return p;
    }

    @Override
    public String toString() {
        return "InferenceModel[64 -> " + hidden + " -> 10]";
    }
}
