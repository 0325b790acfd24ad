package io.viper.demo.digits;

/**
 * The arithmetic of the 64 -> hidden (ReLU) -> 10 (softmax) network, shared by {@link Mlp} and {@link InferenceModel}
 * so that both compute bit-identical outputs for the same parameters. Stateless; every method works only on the arrays
 * it is given.
 */
final class MlpKernels {
    static final int IN = DigitsDataset.PIXELS;
    static final int OUT = DigitsDataset.CLASSES;

    private MlpKernels() {}

    /**
     * Forward pass for one image: writes the ReLU activations to {@code h[hOff, hOff + hidden)} and the class
     * probabilities to {@code p[pOff, pOff + 10)}.
     *
     * <p>The first layer's weight is given transposed, {@code w1t} [64, hidden], so that the loop over hidden units is
     * an axpy the JIT vectorises, and zero pixels (about half of each digit image) are skipped. Each activation still
     * sums bias, then pixel 0, 1, ... 63 in order.
     */
    static void forward(
            float[] w1t,
            float[] b1,
            float[] w2,
            float[] b2,
            int hidden,
            float[] x,
            int xOff,
            float[] h,
            int hOff,
            float[] p,
            int pOff) {
        System.arraycopy(b1, 0, h, hOff, hidden);
        for (int k = 0; k < IN; k++) {
            float xv = x[xOff + k];
            if (xv == 0f) {
                continue;
            }
            int row = k * hidden;
            for (int j = 0; j < hidden; j++) {
                h[hOff + j] += w1t[row + j] * xv;
            }
        }
        for (int j = 0; j < hidden; j++) {
            if (!(h[hOff + j] > 0f)) {
                h[hOff + j] = 0f;
            }
        }
        double max = Double.NEGATIVE_INFINITY;
        double[] z = new double[OUT];
        for (int o = 0; o < OUT; o++) {
            int row = o * hidden;
            float s = b2[o];
            for (int j = 0; j < hidden; j++) {
                s += w2[row + j] * h[hOff + j];
            }
            z[o] = s;
            if (s > max) {
                max = s;
            }
        }
        softmax(z, max, p, pOff);
    }

    /** {@code [rows, cols]} row-major to {@code [cols, rows]} row-major, into a new array. */
    static float[] transpose(float[] a, int rows, int cols) {
        float[] t = new float[a.length];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                t[c * rows + r] = a[r * cols + c];
            }
        }
        return t;
    }

    private static void softmax(double[] z, double max, float[] p, int pOff) {
        double sum = 0;
        for (int o = 0; o < OUT; o++) {
            double e = Math.exp(z[o] - max);
            z[o] = e;
            sum += e;
        }
        for (int o = 0; o < OUT; o++) {
            p[pOff + o] = (float) (z[o] / sum);
        }
    }
}
