package io.viper.predictor;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The candidate learning-curve families. Parameters are named {@code a, b, c} in formula order.
 *
 * <ul>
 *   <li>{@link #EXP2}: {@code a*exp(-b*x)}
 *   <li>{@link #EXP3}: {@code a*exp(-b*x)+c}
 *   <li>{@link #LIN2}: {@code max(0, a*x+b)}: a straight line that stops at zero, since a loss is never negative (a
 *       falling line fitted on a short warm-up would otherwise predict negative losses beyond the warm-up, and negative
 *       CILs with them)
 *   <li>{@link #EXPD3}: {@code c-(c-a)*exp(-b*x)}
 *   <li>{@link #POW3}: {@code a*x^(-b)+c} (defined for {@code x > 0})
 * </ul>
 */
public enum CurveFamily {
    /** {@code a*exp(-b*x)}. */
    EXP2("a*exp(-b*x)", 2),
    /** {@code a*exp(-b*x)+c}. */
    EXP3("a*exp(-b*x)+c", 3),
    /** {@code max(0, a*x+b)}: a line clamped at zero. */
    LIN2("max(0,a*x+b)", 2),
    /** {@code c-(c-a)*exp(-b*x)}: starts at {@code a} for x = 0 and tends to {@code c}. */
    EXPD3("c-(c-a)*exp(-b*x)", 3),
    /** {@code a*x^(-b)+c}, the power law. */
    POW3("a*x^(-b)+c", 3);

    private final String formula;
    private final int parameterCount;

    CurveFamily(String formula, int parameterCount) {
        this.formula = formula;
        this.parameterCount = parameterCount;
    }

    /** The formula in terms of {@code x} and the parameters {@code a, b, c}. */
    public String formula() {
        return formula;
    }

    /** How many parameters the family has (2 or 3). */
    public int parameterCount() {
        return parameterCount;
    }

    /** The lower-case name used on the command line and in JSON, e.g. {@code exp3}. */
    public String displayName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Whether the family needs {@code x > 0} (the power law). */
    public boolean needsPositiveX() {
        return this == POW3;
    }

    /** The value of the curve with parameters {@code p} at {@code x}. */
    public double value(double[] p, double x) {
        return switch (this) {
            case EXP2 -> p[0] * Math.exp(-p[1] * x);
            case EXP3 -> p[0] * Math.exp(-p[1] * x) + p[2];
            case LIN2 -> Math.max(0.0, p[0] * x + p[1]);
            case EXPD3 -> p[2] - (p[2] - p[0]) * Math.exp(-p[1] * x);
            case POW3 -> p[0] * Math.pow(x, -p[1]) + p[2];
        };
    }

    /**
     * The value at {@code x}, with the partial derivatives by each parameter written to {@code grad} (length at least
     * {@link #parameterCount()}).
     */
    public double valueAndGradient(double[] p, double x, double[] grad) {
        return switch (this) {
            case EXP2 -> {
                double e = Math.exp(-p[1] * x);
                grad[0] = e;
                grad[1] = -p[0] * x * e;
                yield p[0] * e;
            }
            case EXP3 -> {
                double e = Math.exp(-p[1] * x);
                grad[0] = e;
                grad[1] = -p[0] * x * e;
                grad[2] = 1.0;
                yield p[0] * e + p[2];
            }
            case LIN2 -> {
                double v = p[0] * x + p[1];
                boolean clamped = v < 0;
                grad[0] = clamped ? 0.0 : x;
                grad[1] = clamped ? 0.0 : 1.0;
                yield clamped ? 0.0 : v;
            }
            case EXPD3 -> {
                double e = Math.exp(-p[1] * x);
                grad[0] = e;
                grad[1] = (p[2] - p[0]) * x * e;
                grad[2] = 1.0 - e;
                yield p[2] - (p[2] - p[0]) * e;
            }
            case POW3 -> {
                double q = Math.pow(x, -p[1]);
                grad[0] = q;
                grad[1] = -p[0] * q * Math.log(x);
                grad[2] = 1.0;
                yield p[0] * q + p[2];
            }
            default -> throw new AssertionError(this);
        };
    }

    /**
     * A curve of this family with the given parameters.
     *
     * @throws ViperConfigException if the count is wrong or a parameter is not finite
     */
    public LossCurve curve(double... params) {
        if (params == null || params.length != parameterCount) {
            throw new ViperConfigException("curve " + displayName() + " (" + formula + ") takes " + parameterCount
                    + " parameters, got " + (params == null ? 0 : params.length));
        }
        for (int i = 0; i < params.length; i++) {
            if (!Double.isFinite(params[i])) {
                throw new ViperConfigException("curve " + displayName() + ": parameter " + (char) ('a' + i)
                        + " must be a finite number, got " + params[i]);
            }
        }
        return new Fitted(this, params.clone());
    }

    /**
     * The family named {@code name}, ignoring case.
     *
     * @throws ViperConfigException for an unknown name, listing the known ones
     */
    public static CurveFamily parse(String name) {
        if (name != null) {
            for (CurveFamily f : values()) {
                if (f.displayName().equalsIgnoreCase(name.strip())) {
                    return f;
                }
            }
        }
        throw new ViperConfigException("unknown curve '" + name + "'; known: "
                + Arrays.stream(values()).map(CurveFamily::displayName).collect(Collectors.joining(", ")));
    }

    /**
     * Parses {@code NAME:p1,p2,...} (e.g. {@code exp3:2.0,0.001,0.3}) into a curve.
     *
     * @throws ViperConfigException for an unknown name, a wrong parameter count or a bad number
     */
    public static LossCurve parseSpec(String spec) {
        if (spec == null || spec.isBlank()) {
            throw new ViperConfigException("curve: expected NAME:p1,p2,... (e.g. exp3:2,0.001,0.3), got nothing");
        }
        int colon = spec.indexOf(':');
        if (colon < 0) {
            throw new ViperConfigException("curve '" + spec + "': expected NAME:p1,p2,... (e.g. exp3:2,0.001,0.3)");
        }
        CurveFamily family = parse(spec.substring(0, colon));
        String rest = spec.substring(colon + 1).strip();
        String[] parts = rest.isEmpty() ? new String[0] : rest.split(",", -1);
        double[] p = new double[parts.length];
        for (int i = 0; i < parts.length; i++) {
            try {
                p[i] = Double.parseDouble(parts[i].strip());
            } catch (NumberFormatException e) {
                throw new ViperConfigException(
                        "curve '" + spec + "': parameter " + (i + 1) + " '" + parts[i].strip() + "' is not a number");
            }
        }
        return family.curve(p);
    }

    /** A curve of a family with fixed parameters. */
    record Fitted(CurveFamily family, double[] p) implements LossCurve {
        @Override
        public String name() {
            return family.displayName();
        }

        @Override
        public double[] params() {
            return p.clone();
        }

        @Override
        public double value(double x) {
            return family.value(p, x);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Fitted f && f.family == family && Arrays.equals(f.p, p);
        }

        @Override
        public int hashCode() {
            return family.hashCode() * 31 + Arrays.hashCode(p);
        }

        @Override
        public String toString() {
            return describe();
        }
    }
}
