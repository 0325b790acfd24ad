package io.viper.scheduler;

import java.util.Arrays;

/**
 * A checkpoint schedule and what it costs.
 *
 * @param algorithm {@code fixed}, {@code adaptive}, {@code optimal}, {@code epoch} (or a caller's name)
 * @param checkpoints the checkpoint iterations, strictly increasing, within {@code s+1..e}
 * @param cil the cumulative inference loss, exactly as {@link CilSimulator#cil(long[])} computes it
 * @param overheadSeconds training overhead {@code K * t_s}
 * @param detail a short human note, e.g. {@code every 500 iterations}; may be empty
 */
public record Schedule(String algorithm, long[] checkpoints, double cil, double overheadSeconds, String detail) {

    /** Copies the checkpoints. */
    public Schedule {
        checkpoints = checkpoints.clone();
        detail = detail == null ? "" : detail;
    }

    /** A copy of the checkpoint iterations. */
    @Override
    public long[] checkpoints() {
        return checkpoints.clone();
    }

    /** The number of checkpoints K. */
    public int count() {
        return checkpoints.length;
    }

    /** The checkpoints as text, abbreviated to the first and last few when there are more than {@code max}. */
    public String checkpointsText(int max) {
        int n = checkpoints.length;
        if (n == 0) {
            return "(none)";
        }
        if (n <= max) {
            return joined(0, n);
        }
        int head = Math.max(1, max - max / 3);
        int tail = Math.max(1, max / 3);
        return joined(0, head) + ", ... (" + (n - head - tail) + " more) ..., " + joined(n - tail, n);
    }

    private String joined(int from, int to) {
        StringBuilder sb = new StringBuilder();
        for (int i = from; i < to; i++) {
            if (i > from) {
                sb.append(", ");
            }
            sb.append(checkpoints[i]);
        }
        return sb.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Schedule s
                && s.algorithm.equals(algorithm)
                && Arrays.equals(s.checkpoints, checkpoints)
                && Double.compare(s.cil, cil) == 0
                && Double.compare(s.overheadSeconds, overheadSeconds) == 0
                && s.detail.equals(detail);
    }

    @Override
    public int hashCode() {
        return (algorithm.hashCode() * 31 + Arrays.hashCode(checkpoints)) * 31 + Double.hashCode(cil);
    }

    @Override
    public String toString() {
        return algorithm + "[" + count() + " checkpoints: " + checkpointsText(8) + "; cil=" + cil + ", overhead="
                + overheadSeconds + "s]";
    }
}
