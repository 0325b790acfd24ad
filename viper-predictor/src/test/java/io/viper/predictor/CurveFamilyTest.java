package io.viper.predictor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class CurveFamilyTest {

    @Test
    void formulasEvaluateAsDocumented() {
        assertEquals(2 * Math.exp(-0.5 * 3), CurveFamily.EXP2.curve(2, 0.5).value(3), 1e-15);
        assertEquals(
                2 * Math.exp(-0.5 * 3) + 1, CurveFamily.EXP3.curve(2, 0.5, 1).value(3), 1e-15);
        assertEquals(2 * 3 + 1, CurveFamily.LIN2.curve(2, 1).value(3), 1e-15);
        assertEquals(
                1 - (1 - 2) * Math.exp(-0.5 * 3),
                CurveFamily.EXPD3.curve(2, 0.5, 1).value(3),
                1e-15);
        assertEquals(
                2 * Math.pow(3, -0.5) + 1, CurveFamily.POW3.curve(2, 0.5, 1).value(3), 1e-15);
    }

    @Test
    void gradientsMatchFiniteDifferences() {
        double[] p3 = {2.0, 0.3, 0.5};
        for (CurveFamily f : CurveFamily.values()) {
            double[] p = Arrays.copyOf(p3, f.parameterCount());
            double[] g = new double[3];
            double x = 2.5;
            double v = f.valueAndGradient(p, x, g);
            assertEquals(f.value(p, x), v, 1e-12);
            for (int i = 0; i < p.length; i++) {
                double[] q = p.clone();
                q[i] += 1e-6;
                double fd = (f.value(q, x) - f.value(p, x)) / 1e-6;
                assertEquals(fd, g[i], 1e-4, f + " d/d" + (char) ('a' + i));
            }
        }
    }

    @Test
    void lin2StopsAtZeroInsteadOfPredictingANegativeLoss() {
        LossCurve falling = CurveFamily.LIN2.curve(-0.01, 2); // zero at x = 200
        assertEquals(1.0, falling.value(100), 1e-12);
        assertEquals(0.0, falling.value(300), 0.0);
        double[] g = new double[2];
        assertEquals(0.0, CurveFamily.LIN2.valueAndGradient(new double[] {-0.01, 2}, 300, g), 0.0);
        assertArrayEquals(new double[] {0, 0}, g, "no gradient where the line is clamped");
    }

    @Test
    void parsesSpecs() {
        LossCurve c = CurveFamily.parseSpec("Exp3:2, 0.001,0.3");
        assertEquals("exp3", c.name());
        assertArrayEquals(new double[] {2, 0.001, 0.3}, c.params());
        assertEquals(CurveFamily.POW3, CurveFamily.parse("POW3"));
    }

    @Test
    void rejectsBadSpecsWithOneLineMessages() {
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> CurveFamily.parseSpec("exp4:1,2"));
        assertTrue(
                e.getMessage().contains("unknown curve 'exp4'")
                        && e.getMessage().contains("pow3"),
                e.getMessage());
        e = assertThrows(ViperConfigException.class, () -> CurveFamily.parseSpec("exp3:1,2"));
        assertTrue(e.getMessage().contains("takes 3 parameters, got 2"), e.getMessage());
        e = assertThrows(ViperConfigException.class, () -> CurveFamily.parseSpec("lin2:1,x"));
        assertTrue(e.getMessage().contains("'x' is not a number"), e.getMessage());
        assertThrows(ViperConfigException.class, () -> CurveFamily.parseSpec("exp2"));
        assertThrows(ViperConfigException.class, () -> CurveFamily.EXP2.curve(1, Double.NaN));
        for (String bad : new String[] {"exp4:1,2", "exp3:1,2", "lin2:1,x", "exp2"}) {
            String m = assertThrows(ViperConfigException.class, () -> CurveFamily.parseSpec(bad))
                    .getMessage();
            assertTrue(!m.contains("\n"), m);
        }
    }
}
