package io.viper.scheduler;

/**
 * Scaling by the power of two that brings the largest magnitude of some losses into {@code [0.5, 1)}: exact, so a
 * computation linear in the losses gives the same answer scaled back, while products and squares of the scaled values
 * neither overflow (losses near 1e200) nor underflow (near 1e-200). Stateless; any thread.
 */
final class UnitScale {
    private UnitScale() {}

    /**
     * The exponent {@code k} such that {@code v * 2^k} has its largest magnitude in {@code [0.5, 1)}; 0 when all are 0.
     */
    static int shift(double[] v) {
        double peak = 0;
        for (double x : v) {
            peak = Math.max(peak, Math.abs(x));
        }
        return peak == 0 ? 0 : -Math.getExponent(peak) - 1;
    }

    /** A copy of {@code v} multiplied by {@code 2^shift}. */
    static double[] scaled(double[] v, int shift) {
        double[] out = new double[v.length];
        for (int j = 0; j < v.length; j++) {
            out[j] = Math.scalb(v[j], shift);
        }
        return out;
    }
}
