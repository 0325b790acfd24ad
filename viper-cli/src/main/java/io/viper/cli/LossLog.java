package io.viper.cli;

import io.viper.errors.ViperConfigException;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A training-loss log read from CSV: one {@code iteration,loss} pair per line, iterations strictly
 * increasing, an optional header line first, blank lines and lines starting with {@code #} ignored.
 *
 * @param iterations the iterations, as doubles for fitting
 * @param losses the losses
 */
record LossLog(double[] iterations, double[] losses) {

    /**
     * Reads {@code file}.
     *
     * @throws ViperConfigException naming the file and line for anything unreadable
     */
    static LossLog read(Path file) {
        double[] x = new double[1024];
        double[] y = new double[1024];
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
                if (parts.length != 2) {
                    throw new ViperConfigException("loss log " + file + " line " + no + ": expected 'iteration,loss', got '" + abbreviate(t) + "'");
                }
                long it;
                double loss;
                try {
                    it = Long.parseLong(parts[0].strip());
                    loss = Double.parseDouble(parts[1].strip());
                } catch (NumberFormatException e) {
                    if (wasFirst) {
                        continue; // a header
                    }
                    throw new ViperConfigException("loss log " + file + " line " + no + ": expected 'iteration,loss' as an integer and a number, got '"
                            + abbreviate(t) + "'");
                }
                if (it < 0) {
                    throw new ViperConfigException("loss log " + file + " line " + no + ": iteration must be at least 0, got " + it);
                }
                if (!Double.isFinite(loss)) {
                    throw new ViperConfigException("loss log " + file + " line " + no + ": loss must be a finite number, got " + parts[1].strip());
                }
                if (it <= prev) {
                    throw new ViperConfigException("loss log " + file + " line " + no + ": iteration " + it + " does not follow " + prev + " (iterations must increase)");
                }
                prev = it;
                if (n == x.length) {
                    x = Arrays.copyOf(x, n * 2);
                    y = Arrays.copyOf(y, n * 2);
                }
                x[n] = it;
                y[n] = loss;
                n++;
            }
        } catch (NoSuchFileException e) {
            throw new ViperConfigException("loss log " + file + ": no such file");
        } catch (IOException e) {
            throw new ViperConfigException("loss log " + file + ": cannot read (" + e.getMessage() + ")", e);
        }
        if (n == 0) {
            throw new ViperConfigException("loss log " + file + ": no 'iteration,loss' lines");
        }
        return new LossLog(Arrays.copyOf(x, n), Arrays.copyOf(y, n));
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
