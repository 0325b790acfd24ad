package io.viper.predictor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import java.util.Random;
import org.junit.jupiter.api.Test;

class StalenessModelTest {
    static final LossCurve CURVE = CurveFamily.EXP3.curve(2, 0.01, 0.3);

    @Test
    void recoversTheDriftFromNoisyPairedGaps() {
        Random r = new Random(4);
        int n = 400;
        double[] v = new double[n];
        double[] at = new double[n];
        double[] stale = new double[n];
        double[] fresh = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = 100 + 10 * (i / 20);
            at[i] = v[i] + 1 + i % 20;
            fresh[i] = CURVE.value(at[i]) + 0.01 * r.nextGaussian();
            stale[i] = CURVE.value(v[i]) + 0.002 * (at[i] - v[i]) + 0.01 * r.nextGaussian();
        }
        StalenessModel m = StalenessModel.fit(CURVE, v, at, stale, fresh);
        assertEquals(0.002, m.ratePerIteration(), 3e-4);
        assertEquals(CURVE.value(100) + m.ratePerIteration() * 50, m.servedLoss(CURVE, 100, 150), 1e-12);
        assertEquals(CURVE.value(100), m.servedLoss(CURVE, 100, 90), 1e-12, "no drift before the version exists");
    }

    @Test
    void theCautiousFitNeverGoesBelowWhatTheNoiseCannotRuleOut() {
        // no drift in truth, paired gaps noisy: fit says 0 or a little, the cautious fit one standard error
        Random r = new Random(9);
        int n = 100;
        double[] v = new double[n];
        double[] at = new double[n];
        double[] stale = new double[n];
        double[] fresh = new double[n];
        double sxx = 0;
        for (int i = 0; i < n; i++) {
            v[i] = 100 + 20 * (i / 20);
            at[i] = v[i] + 1 + i % 20;
            fresh[i] = CURVE.value(at[i]);
            stale[i] = CURVE.value(v[i]) - 0.0005 * (at[i] - v[i]) + 0.04 * r.nextGaussian();
            sxx += (at[i] - v[i]) * (at[i] - v[i]);
        }
        assertSame(StalenessModel.NONE, StalenessModel.fit(CURVE, v, at, stale, fresh));
        double cautious = StalenessModel.fitCautious(CURVE, v, at, stale, fresh).ratePerIteration();
        double se = 0.04 / Math.sqrt(sxx);
        assertTrue(cautious > 0.5 * se && cautious < 2 * se, cautious + " against a standard error of " + se);
        // a drift well above the noise: the cautious fit is the fit
        for (int i = 0; i < n; i++) {
            stale[i] += 0.0025 * (at[i] - v[i]);
        }
        assertEquals(
                StalenessModel.fit(CURVE, v, at, stale, fresh).ratePerIteration(),
                StalenessModel.fitCautious(CURVE, v, at, stale, fresh).ratePerIteration(),
                1e-15);
    }

    @Test
    void gapsTheCurveExplainsAreNoDrift() {
        // stale and fresh losses on the same samples differ only by the training progress: rate 0, Viper's model
        double[] v = {100, 100, 150, 150};
        double[] at = {110, 130, 160, 190};
        double[] stale = new double[4];
        double[] fresh = new double[4];
        for (int i = 0; i < 4; i++) {
            stale[i] = CURVE.value(v[i]);
            fresh[i] = CURVE.value(at[i]);
        }
        assertSame(StalenessModel.NONE, StalenessModel.fit(CURVE, v, at, stale, fresh));
        assertSame(StalenessModel.NONE, StalenessModel.fit(CURVE, v, at, fresh, fresh));
        assertTrue(StalenessModel.NONE.isNone());
        assertEquals("no drift", StalenessModel.NONE.describe());
    }

    @Test
    void refusesBadInput() {
        assertThrows(ViperConfigException.class, () -> new StalenessModel(-1));
        assertThrows(ViperConfigException.class, () -> new StalenessModel(Double.NaN));
        assertThrows(
                ViperConfigException.class,
                () -> StalenessModel.fit(CURVE, new double[1], new double[2], new double[1], new double[1]));
        String m = assertThrows(
                        ViperConfigException.class,
                        () -> StalenessModel.fit(
                                CURVE, new double[] {1}, new double[] {2}, new double[] {Double.NaN}, new double[] {1}))
                .getMessage();
        assertTrue(m.contains("measurement 1") && !m.contains("\n"), m);
    }
}
