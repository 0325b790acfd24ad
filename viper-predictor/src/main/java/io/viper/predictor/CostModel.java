package io.viper.predictor;

import io.viper.TransferPath;
import io.viper.errors.ViperConfigException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import smile.data.DataFrame;
import smile.data.formula.Formula;
import smile.regression.LinearModel;
import smile.regression.OLS;

/**
 * Predicts the producer stall {@code t_s} and the consumer load time {@code t_load} of a model of a given size over a
 * given {@link TransferPath}. Paths priced alike share a line ({@link TransferPath#costLine()}: inline with host,
 * gpu-pipe with tcp), fitted on the samples of all of them.
 *
 * <p>For each (phase, line) the model is {@code seconds = latency + size / bandwidth}, fitted by Smile's ordinary least
 * squares ({@link OLS}) on the measured samples when there are at least three with two distinct sizes; with fewer
 * samples, the mean seconds per byte of the samples is used (zero latency); without samples, the defaults below, taken
 * from the transfer measurements recorded in the design (host-to-host RDMA over shared memory about 15 GB/s, the speed
 * of a memory copy; TCP about 1.3 GB/s):
 *
 * <ul>
 *   <li>{@link Phase#SAVE} (the copy into the staging buffer, the only stall the training loop sees): 15 GB/s plus 0.5
 *       ms on every path.
 *   <li>{@link Phase#LOAD}: {@code gpu} and {@code host} 15 GB/s, {@code tcp} 1.3 GB/s, each plus 1 ms; {@code pfs} 1
 *       GB/s plus 10 ms (an assumed parallel file system figure, not measured here).
 * </ul>
 *
 * Predictions are never negative. Instances are immutable.
 */
public final class CostModel {

    /** Which time a sample measures. */
    public enum Phase {
        /** The producer stall per checkpoint, {@code t_s}. */
        SAVE,
        /** The consumer's load time, {@code t_load}. */
        LOAD
    }

    /**
     * One measured transfer.
     *
     * @param phase what was measured
     * @param path the path the update took
     * @param sizeBytes model size in bytes (positive)
     * @param seconds the measured time (non-negative, finite)
     */
    public record Sample(Phase phase, TransferPath path, long sizeBytes, double seconds) {
        /** Validates. */
        public Sample {
            if (phase == null) {
                throw new ViperConfigException("cost sample: phase is missing");
            }
            if (path == null) {
                throw new ViperConfigException("cost sample: path is missing");
            }
            if (sizeBytes <= 0) {
                throw new ViperConfigException("cost sample: size must be positive, got " + sizeBytes);
            }
            if (!(seconds >= 0) || !Double.isFinite(seconds)) {
                throw new ViperConfigException("cost sample: seconds must be a non-negative number, got " + seconds);
            }
        }
    }

    /**
     * A fitted or default line for one (phase, {@linkplain TransferPath#costLine() cost line}).
     *
     * @param latencySeconds seconds at size zero
     * @param secondsPerByte seconds per byte (1 / bandwidth)
     * @param source {@code ols}, {@code mean} or {@code default}
     * @param samples how many samples it was fitted on
     */
    public record Line(double latencySeconds, double secondsPerByte, String source, int samples) {
        /** Seconds for {@code sizeBytes}, never negative. */
        public double seconds(long sizeBytes) {
            return Math.max(0.0, latencySeconds + secondsPerByte * sizeBytes);
        }
    }

    private static final double GB = 1e9;
    private static final Map<String, Line> DEFAULT_LOAD = Map.of(
            "gpu", new Line(1e-3, 1 / (15 * GB), "default", 0),
            "host", new Line(1e-3, 1 / (15 * GB), "default", 0),
            "tcp", new Line(1e-3, 1 / (1.3 * GB), "default", 0),
            "pfs", new Line(10e-3, 1 / (1.0 * GB), "default", 0));
    private static final Line DEFAULT_SAVE = new Line(0.5e-3, 1 / (15 * GB), "default", 0);

    private final Map<String, Line> lines;

    private CostModel(Map<String, Line> lines) {
        this.lines = Map.copyOf(lines);
    }

    /** The model with defaults only. */
    public static CostModel defaults() {
        return new CostModel(Map.of());
    }

    /**
     * Fits a model to measured samples; (phase, cost line) pairs without samples keep the defaults.
     *
     * @throws ViperConfigException if {@code samples} is null or holds a null
     */
    public static CostModel fit(List<Sample> samples) {
        if (samples == null) {
            throw new ViperConfigException("cost model: samples must not be null");
        }
        Map<String, List<Sample>> groups = new TreeMap<>();
        for (Sample s : samples) {
            if (s == null) {
                throw new ViperConfigException("cost model: a sample is null");
            }
            groups.computeIfAbsent(key(s.phase(), s.path().costLine()), k -> new ArrayList<>())
                    .add(s);
        }
        Map<String, Line> lines = new HashMap<>();
        groups.forEach((k, g) -> lines.put(k, fitLine(g)));
        return new CostModel(lines);
    }

    private static Line fitLine(List<Sample> g) {
        long distinct = g.stream().mapToLong(Sample::sizeBytes).distinct().count();
        if (g.size() >= 3 && distinct >= 2) {
            double[][] rows = new double[g.size()][];
            for (int i = 0; i < g.size(); i++) {
                rows[i] = new double[] {g.get(i).sizeBytes() / GB, g.get(i).seconds()};
            }
            NativeBlas.singleThreaded();
            LinearModel m = OLS.fit(Formula.lhs("seconds"), DataFrame.of(rows, "gb", "seconds"));
            double intercept = m.intercept();
            double slopePerGb = m.coefficients().get(m.coefficients().size() - 1);
            if (Double.isFinite(intercept) && Double.isFinite(slopePerGb) && slopePerGb >= 0) {
                return new Line(intercept, slopePerGb / GB, "ols", g.size());
            }
        }
        double perByte = g.stream()
                .mapToDouble(s -> s.seconds() / s.sizeBytes())
                .average()
                .orElseThrow();
        return new Line(0.0, perByte, "mean", g.size());
    }

    /** The producer stall {@code t_s} in seconds for a checkpoint of {@code sizeBytes} on {@code path}. */
    public double saveSeconds(TransferPath path, long sizeBytes) {
        return line(Phase.SAVE, path).seconds(checkSize(sizeBytes));
    }

    /** The consumer load time {@code t_load} in seconds for a model of {@code sizeBytes} over {@code path}. */
    public double loadSeconds(TransferPath path, long sizeBytes) {
        return line(Phase.LOAD, path).seconds(checkSize(sizeBytes));
    }

    /**
     * The line used for (phase, path): the one of the path's {@linkplain TransferPath#costLine() cost line}.
     *
     * @throws ViperConfigException for a missing path, or one with neither samples nor a default
     */
    public Line line(Phase phase, TransferPath path) {
        if (path == null) {
            throw new ViperConfigException("cost model: path is missing");
        }
        String p = path.costLine();
        Line l = lines.get(key(phase, p));
        if (l != null) {
            return l;
        }
        if (phase == Phase.SAVE) {
            return DEFAULT_SAVE;
        }
        Line d = DEFAULT_LOAD.get(p);
        if (d == null) {
            throw new ViperConfigException("cost model: no samples and no default for path '" + path + "' (cost line "
                    + p + "); known lines: " + String.join(", ", new TreeMap<>(DEFAULT_LOAD).keySet()));
        }
        return d;
    }

    private static long checkSize(long sizeBytes) {
        if (sizeBytes <= 0) {
            throw new ViperConfigException("cost model: size must be positive, got " + sizeBytes);
        }
        return sizeBytes;
    }

    private static String key(Phase phase, String line) {
        return phase + "/" + line;
    }
}
