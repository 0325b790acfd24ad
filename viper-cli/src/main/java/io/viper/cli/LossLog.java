package io.viper.cli;

import io.viper.errors.IoProblems;
import io.viper.errors.ViperConfigException;
import io.viper.predictor.LossCurve;
import io.viper.predictor.StalenessModel;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A training-loss log read from CSV: one {@code iteration,loss} pair per line, iterations strictly increasing, an
 * optional header line first, blank lines and lines starting with {@code #} ignored. A line may add
 * {@code ,deployed_iteration,deployed_loss}: the iteration of the version consumers held then and its loss on the same
 * batch, from which the staleness-aware objective takes the drift.
 *
 * @param iterations the iterations, as doubles for fitting
 * @param losses the losses
 * @param deployedIterations the deployed version's iteration per line, NaN where the line has none
 * @param deployedLosses its loss on the line's batch, NaN where the line has none
 */
record LossLog(double[] iterations, double[] losses, double[] deployedIterations, double[] deployedLosses) {

    /**
     * Reads {@code file}.
     *
     * @throws ViperConfigException naming the file and line for anything unreadable, and for a path that is not a
     *     regular file (a directory, a FIFO, a device), which is refused without being opened
     */
    static LossLog read(Path file) {
        IoProblems.notARegularFile(file).ifPresent(problem -> {
            throw new ViperConfigException("loss log " + file + ": " + problem + ", not a CSV file");
        });
        double[] x = new double[1024];
        double[] y = new double[1024];
        double[] dx = new double[1024];
        double[] dy = new double[1024];
        int n = 0;
        long prev = Long.MIN_VALUE;
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            int no = 0;
            boolean first = true;
            while ((line = r.readLine()) != null) {
                no++;
                String t = line.strip();
                if (t.isEmpty() || t.startsWith("#")) {
                    continue;
                }
                String[] parts = t.split(",", -1);
                boolean wasFirst = first;
                first = false;
                if (parts.length != 2 && parts.length != 4) {
                    throw new ViperConfigException("loss log " + file + " line " + no
                            + ": expected 'iteration,loss[,deployed_iteration,deployed_loss]', got '" + abbreviate(t)
                            + "'");
                }
                long it;
                double loss;
                double deployedIt = Double.NaN;
                double deployedLoss = Double.NaN;
                try {
                    it = Long.parseLong(parts[0].strip());
                    loss = Double.parseDouble(parts[1].strip());
                    if (parts.length == 4) {
                        deployedIt = Long.parseLong(parts[2].strip());
                        deployedLoss = Double.parseDouble(parts[3].strip());
                    }
                } catch (NumberFormatException e) {
                    if (wasFirst) {
                        continue; // a header
                    }
                    throw new ViperConfigException("loss log " + file + " line " + no
                            + ": expected 'iteration,loss' as an integer and a number, got '" + abbreviate(t) + "'");
                }
                if (it < 0) {
                    throw new ViperConfigException(
                            "loss log " + file + " line " + no + ": iteration must be at least 0, got " + it);
                }
                if (!Double.isFinite(loss)) {
                    throw new ViperConfigException("loss log " + file + " line " + no
                            + ": loss must be a finite number, got " + parts[1].strip());
                }
                if (parts.length == 4 && (!Double.isFinite(deployedLoss) || deployedIt > it || deployedIt < 0)) {
                    throw new ViperConfigException(
                            "loss log " + file + " line " + no + ": the deployed version must be of an iteration 0.."
                                    + it + " with a finite loss, got " + parts[2].strip() + "," + parts[3].strip());
                }
                if (it <= prev) {
                    throw new ViperConfigException("loss log " + file + " line " + no + ": iteration " + it
                            + " does not follow " + prev + " (iterations must increase)");
                }
                prev = it;
                if (n == x.length) {
                    x = Arrays.copyOf(x, n * 2);
                    y = Arrays.copyOf(y, n * 2);
                    dx = Arrays.copyOf(dx, n * 2);
                    dy = Arrays.copyOf(dy, n * 2);
                }
                x[n] = it;
                y[n] = loss;
                dx[n] = deployedIt;
                dy[n] = deployedLoss;
                n++;
            }
        } catch (NoSuchFileException e) {
            throw new ViperConfigException("loss log " + file + ": no such file");
        } catch (CharacterCodingException e) {
            // the reader decodes ahead of the lines it returns, so no line number is certain here
            throw new ViperConfigException("loss log " + file + ": not UTF-8 text; is it the right file?", e);
        } catch (IOException e) {
            throw new ViperConfigException("loss log " + file + ": cannot read: " + IoProblems.reason(e), e);
        }
        if (n == 0) {
            throw new ViperConfigException("loss log " + file + ": no 'iteration,loss' lines");
        }
        return new LossLog(Arrays.copyOf(x, n), Arrays.copyOf(y, n), Arrays.copyOf(dx, n), Arrays.copyOf(dy, n));
    }

    /**
     * The drift measured by the deployed-version columns of the lines up to iteration {@code s}, given the curve fitted
     * on them ({@link StalenessModel#fit}); {@link StalenessModel#NONE} without such lines.
     */
    StalenessModel drift(LossCurve curve, long s) {
        int n = countUpTo(s);
        double[][] cols = new double[4][n];
        int m = 0;
        for (int i = 0; i < n; i++) {
            if (!Double.isNaN(deployedIterations[i])) {
                cols[0][m] = deployedIterations[i];
                cols[1][m] = iterations[i];
                cols[2][m] = deployedLosses[i];
                cols[3][m] = losses[i];
                m++;
            }
        }
        return StalenessModel.fit(
                curve,
                Arrays.copyOf(cols[0], m),
                Arrays.copyOf(cols[1], m),
                Arrays.copyOf(cols[2], m),
                Arrays.copyOf(cols[3], m));
    }

    /** How many points have {@code iteration <= s}. */
    int countUpTo(long s) {
        int n = 0;
        while (n < iterations.length && iterations[n] <= s) {
            n++;
        }
        return n;
    }

    private static String abbreviate(String s) {
        return s.length() <= 60 ? s : s.substring(0, 57) + "...";
    }
}
