package io.viper.scheduler;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.GZIPInputStream;

/**
 * Test helper: a real, small training run whose per-iteration loss the predictor is checked on.
 *
 * <p>Trains a one-hidden-layer MLP (64 inputs scaled to [0, 1], 32 tanh units, 10 softmax outputs)
 * on the optical digits data set ({@code shared/data/digits.csv.gz}: 1,797 rows of 64 pixel values
 * 0..16 and the label) with mini-batch SGD, and logs the mini-batch cross-entropy of every
 * iteration before its update: noisy, like any real training-loss log. Deterministic for a seed.
 */
final class DigitsTraining {
    private DigitsTraining() {
    }

    /** The data file: {@code -Dviper.digits}, else {@code shared/data/digits.csv.gz} in a parent directory, else null. */
    static Path locate() {
        String prop = System.getProperty("viper.digits", System.getenv("VIPER_DIGITS"));
        if (prop != null && Files.isRegularFile(Path.of(prop))) {
            return Path.of(prop);
        }
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            Path p = d.resolve("shared/data/digits.csv.gz");
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        Path fixed = Path.of("/work/shared/data/digits.csv.gz");
        return Files.isRegularFile(fixed) ? fixed : null;
    }

    /** Rows of 64 features scaled to [0, 1], and labels. */
    record Data(double[][] x, int[] y) {
    }

    static Data load(Path file) throws IOException {
        List<double[]> xs = new ArrayList<>();
        List<Integer> ys = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(new GZIPInputStream(Files.newInputStream(file)), StandardCharsets.US_ASCII))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                String[] p = line.split(",");
                if (p.length != 65) {
                    throw new IOException(file + ": expected 65 values, got " + p.length);
                }
                double[] row = new double[64];
                for (int i = 0; i < 64; i++) {
                    row[i] = Double.parseDouble(p[i]) / 16.0;
                }
                xs.add(row);
                ys.add(Integer.parseInt(p[64].strip()));
            }
        }
        int[] y = new int[ys.size()];
        for (int i = 0; i < y.length; i++) {
            y[i] = ys.get(i);
        }
        return new Data(xs.toArray(double[][]::new), y);
    }

    /**
     * Multinomial logistic regression (64 inputs, 10 softmax outputs) trained by mini-batch SGD:
     * returns the mini-batch cross-entropy of each iteration before its update (index 0 is
     * iteration 1).
     */
    static double[] trainLogistic(Data d, int iterations, int batch, double lr, long seed) {
        Random rnd = new Random(seed);
        int in = 64;
        int out = 10;
        double[][] w = new double[out][in];
        double[] b = new double[out];
        double[][] gw = new double[out][in];
        double[] gb = new double[out];
        double[] p = new double[out];
        double[] losses = new double[iterations];
        int n = d.y().length;
        for (int it = 0; it < iterations; it++) {
            for (double[] g : gw) {
                java.util.Arrays.fill(g, 0);
            }
            java.util.Arrays.fill(gb, 0);
            double loss = 0;
            for (int s = 0; s < batch; s++) {
                int idx = rnd.nextInt(n);
                double[] x = d.x()[idx];
                for (int k = 0; k < out; k++) {
                    double a = b[k];
                    for (int i = 0; i < in; i++) {
                        a += w[k][i] * x[i];
                    }
                    p[k] = a;
                }
                double z = softmaxNumerators(p, out);
                loss -= Math.log(Math.max(p[d.y()[idx]] / z, 1e-300));
                for (int k = 0; k < out; k++) {
                    double g = p[k] / z - (k == d.y()[idx] ? 1 : 0);
                    gb[k] += g;
                    for (int i = 0; i < in; i++) {
                        gw[k][i] += g * x[i];
                    }
                }
            }
            losses[it] = loss / batch;
            double step = lr / batch;
            for (int k = 0; k < out; k++) {
                b[k] -= step * gb[k];
                for (int i = 0; i < in; i++) {
                    w[k][i] -= step * gw[k][i];
                }
            }
        }
        return losses;
    }

    /**
     * Trains the MLP for {@code iterations} mini-batches of {@code batch} rows at learning rate {@code lr}
     * and returns the loss of each iteration (index 0 is iteration 1).
     */
    static double[] train(Data d, int iterations, int batch, double lr, long seed) {
        Random rnd = new Random(seed);
        int in = 64;
        int hid = 32;
        int out = 10;
        double[][] w1 = new double[hid][in];
        double[] b1 = new double[hid];
        double[][] w2 = new double[out][hid];
        double[] b2 = new double[out];
        for (double[] row : w1) {
            for (int i = 0; i < in; i++) {
                row[i] = rnd.nextGaussian() * 0.1;
            }
        }
        for (double[] row : w2) {
            for (int i = 0; i < hid; i++) {
                row[i] = rnd.nextGaussian() * 0.1;
            }
        }
        double[] losses = new double[iterations];
        double[] h = new double[hid];
        double[] p = new double[out];
        double[] dh = new double[hid];
        double[][] gw1 = new double[hid][in];
        double[] gb1 = new double[hid];
        double[][] gw2 = new double[out][hid];
        double[] gb2 = new double[out];
        int n = d.y().length;
        for (int it = 0; it < iterations; it++) {
            for (double[] g : gw1) {
                java.util.Arrays.fill(g, 0);
            }
            for (double[] g : gw2) {
                java.util.Arrays.fill(g, 0);
            }
            java.util.Arrays.fill(gb1, 0);
            java.util.Arrays.fill(gb2, 0);
            double loss = 0;
            for (int s = 0; s < batch; s++) {
                int idx = rnd.nextInt(n);
                double[] x = d.x()[idx];
                for (int j = 0; j < hid; j++) {
                    double a = b1[j];
                    for (int i = 0; i < in; i++) {
                        a += w1[j][i] * x[i];
                    }
                    h[j] = Math.tanh(a);
                }
                for (int k = 0; k < out; k++) {
                    double a = b2[k];
                    for (int j = 0; j < hid; j++) {
                        a += w2[k][j] * h[j];
                    }
                    p[k] = a;
                }
                double z = softmaxNumerators(p, out);
                for (int k = 0; k < out; k++) {
                    p[k] /= z;
                }
                loss -= Math.log(Math.max(p[d.y()[idx]], 1e-300));
                java.util.Arrays.fill(dh, 0);
                for (int k = 0; k < out; k++) {
                    double g = p[k] - (k == d.y()[idx] ? 1 : 0);
                    gb2[k] += g;
                    for (int j = 0; j < hid; j++) {
                        gw2[k][j] += g * h[j];
                        dh[j] += g * w2[k][j];
                    }
                }
                for (int j = 0; j < hid; j++) {
                    double g = dh[j] * (1 - h[j] * h[j]);
                    gb1[j] += g;
                    for (int i = 0; i < in; i++) {
                        gw1[j][i] += g * x[i];
                    }
                }
            }
            losses[it] = loss / batch;
            double step = lr / batch;
            for (int j = 0; j < hid; j++) {
                b1[j] -= step * gb1[j];
                for (int i = 0; i < in; i++) {
                    w1[j][i] -= step * gw1[j][i];
                }
            }
            for (int k = 0; k < out; k++) {
                b2[k] -= step * gb2[k];
                for (int j = 0; j < hid; j++) {
                    w2[k][j] -= step * gw2[k][j];
                }
            }
        }
        return losses;
    }

    /**
     * Replaces the logits {@code p[0..out)} with exp(p[k] - max), which is stable for large logits, and
     * returns their sum: the softmax is then p[k] / sum.
     */
    private static double softmaxNumerators(double[] p, int out) {
        double max = Double.NEGATIVE_INFINITY;
        for (int k = 0; k < out; k++) {
            max = Math.max(max, p[k]);
        }
        double z = 0;
        for (int k = 0; k < out; k++) {
            p[k] = Math.exp(p[k] - max);
            z += p[k];
        }
        return z;
    }
}
