package io.viper.predictor;

import java.util.Locale;

/**
 * A training-loss curve: the predicted loss as a function of the training iteration.
 *
 * <p>Implementations are immutable and thread-safe. {@link CurveFamily#curve(double...)} builds one from parameters;
 * {@link CurveFitter} fits one to observed losses.
 */
public interface LossCurve {

    /** The family name in lower case, e.g. {@code exp3}. */
    String name();

    /** A copy of the parameters, in the order of the family's formula ({@code a, b, c}). */
    double[] params();

    /** The predicted loss at iteration {@code x}. */
    double value(double x);

    /** A one-line description, e.g. {@code exp3 a*exp(-b*x)+c a=2.0 b=0.001 c=0.3}. */
    default String describe() {
        StringBuilder sb = new StringBuilder(name());
        double[] p = params();
        char n = 'a';
        for (double v : p) {
            sb.append(' ').append(n++).append('=').append(String.format(Locale.ROOT, "%.6g", v));
        }
        return sb.toString();
    }
}
