package io.viper.predictor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import java.util.EnumSet;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class CurveFitterTest {

    static Stream<Arguments> families() {
        return Stream.of(
                Arguments.of(CurveFamily.EXP2, new double[] {2.5, 0.002}),
                Arguments.of(CurveFamily.EXP3, new double[] {2.0, 0.003, 0.4}),
                Arguments.of(CurveFamily.LIN2, new double[] {-0.0004, 2.3}),
                Arguments.of(CurveFamily.EXPD3, new double[] {2.4, 0.0025, 0.35}),
                Arguments.of(CurveFamily.POW3, new double[] {3.0, 0.6, 0.2}));
    }

    /** 3,000 per-iteration losses with 5% multiplicative noise, as mini-batch losses have. */
    static double[][] noisy(CurveFamily f, double[] p, long seed) {
        Random r = new Random(seed);
        int n = 3000;
        double[] x = new double[n];
        double[] y = new double[n];
        for (int i = 0; i < n; i++) {
            x[i] = i + 1;
            y[i] = f.value(p, x[i]) * (1 + 0.05 * r.nextGaussian());
        }
        return new double[][] {x, y};
    }

    @ParameterizedTest
    @MethodSource("families")
    void recoversKnownParametersFromNoisyCurves(CurveFamily f, double[] truth) {
        double[][] d = noisy(f, truth, 42);
        FitResult r = new CurveFitter(EnumSet.of(f), 0.2).fit(d[0], d[1]);
        double[] p = r.curve().params();
        assertEquals(f.displayName(), r.curve().name());
        for (int i = 0; i < truth.length; i++) {
            assertEquals(
                    truth[i],
                    p[i],
                    0.05 * Math.abs(truth[i]) + 0.02,
                    f + " parameter " + (char) ('a' + i) + " of " + r.curve());
        }
        // the noise is ~5% of the loss: the fit error must be of that order, not larger
        assertTrue(r.rmse() < 0.1, "rmse " + r.rmse());
    }

    @ParameterizedTest
    @MethodSource("families")
    void chosenCurveExtrapolatesTheTrueOne(CurveFamily f, double[] truth) {
        double[][] d = noisy(f, truth, 7);
        FitResult r = new CurveFitter().fit(d[0], d[1]);
        // whatever family wins, it must predict the noiseless truth well beyond the data
        for (double x : new double[] {3000, 4000, 5000}) {
            double want = f.value(truth, x);
            assertEquals(want, r.curve().value(x), 0.05 * Math.abs(want) + 0.02, "at x=" + x + " with " + r.curve());
        }
        assertEquals(CurveFamily.values().length, r.candidates().size());
        assertTrue(r.holdoutError()
                        <= r.candidates().get(r.candidates().size() - 1).holdoutError()
                || !r.candidates().get(r.candidates().size() - 1).ok());
    }

    @Test
    void picksPowerLawOverLineForAPowerLaw() {
        double[][] d = noisy(CurveFamily.POW3, new double[] {3.0, 0.6, 0.2}, 3);
        FitResult r =
                new CurveFitter(EnumSet.of(CurveFamily.POW3, CurveFamily.LIN2, CurveFamily.EXP2), 0.2).fit(d[0], d[1]);
        assertEquals("pow3", r.curve().name());
    }

    @Test
    void rejectsBadInput() {
        CurveFitter f = new CurveFitter();
        assertThrows(ViperConfigException.class, () -> f.fit(new double[] {1, 2, 3}, new double[] {1, 2, 3}));
        assertThrows(ViperConfigException.class, () -> f.fit(new double[] {1, 2, 3, 4, 5}, new double[] {1, 2, 3, 4}));
        assertThrows(
                ViperConfigException.class,
                () -> f.fit(new double[] {1, 2, 3, 4, 5}, new double[] {1, 2, Double.NaN, 4, 5}));
        assertThrows(ViperConfigException.class, () -> new CurveFitter(EnumSet.noneOf(CurveFamily.class), 0.2));
        assertThrows(ViperConfigException.class, () -> new CurveFitter(EnumSet.allOf(CurveFamily.class), 0.0));
    }

    @Test
    void powerLawIsSkippedWhenXIsNotPositive() {
        double[] x = new double[50];
        double[] y = new double[50];
        for (int i = 0; i < 50; i++) {
            x[i] = i;
            y[i] = 2 * Math.exp(-0.05 * i) + 0.1;
        }
        FitResult r = new CurveFitter().fit(x, y);
        FitResult.Candidate pow = r.candidates().stream()
                .filter(c -> c.family() == CurveFamily.POW3)
                .findFirst()
                .orElseThrow();
        assertTrue(!pow.ok() && pow.failure().contains("x > 0"), pow.toString());
        assertTrue(r.rmse() < 1e-3, r.toString());
    }
}
