package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.LossCurve;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class SchedulerTest {

    /** A random small input; about half of them run out of requests before e. */
    static ScheduleInput randomInput(Random r, LossCurve curve, int span) {
        long s = 2 + r.nextInt(5);
        double tTrain = 0.5 + r.nextDouble();
        double tSave = r.nextDouble() * 3;
        double tLoad = r.nextDouble() * 3;
        double tInfer = 0.1 + r.nextDouble();
        double full = (span * tTrain + tLoad) / tInfer;
        double n = full * (0.3 + 1.5 * r.nextDouble());
        return new ScheduleInput(curve, s, s + span, n, tTrain, tSave, tLoad, tInfer);
    }

    static LossCurve randomCurve(Random r, int i) {
        return switch (i % 4) {
            case 0 -> CurveFamily.EXP3.curve(1 + r.nextDouble() * 3, 0.05 + r.nextDouble() * 0.5, r.nextDouble());
            case 1 -> CurveFamily.POW3.curve(1 + r.nextDouble() * 3, 0.2 + r.nextDouble(), r.nextDouble());
            case 2 -> CurveFamily.LIN2.curve(-0.01 - r.nextDouble() * 0.1, 3);
            // not monotone: exercises the Li Chao tree
            default -> new LossCurve() {
                final double a = r.nextDouble();
                @Override public String name() { return "wavy"; }
                @Override public double[] params() { return new double[] {a}; }
                @Override public double value(double x) { return 2 + Math.sin(x * (0.7 + a)) - 0.05 * x; }
            };
        };
    }

    /** Minimum CIL over every subset of s+1..e with at most cap checkpoints. */
    static double bruteForce(CilSimulator sim, int cap) {
        ScheduleInput in = sim.input();
        int span = in.span();
        double best = Double.POSITIVE_INFINITY;
        for (int mask = 0; mask < (1 << span); mask++) {
            if (Integer.bitCount(mask) > cap) {
                continue;
            }
            long[] c = new long[Integer.bitCount(mask)];
            int k = 0;
            for (int j = 0; j < span; j++) {
                if ((mask & (1 << j)) != 0) {
                    c[k++] = in.warmup() + j + 1;
                }
            }
            best = Math.min(best, sim.cil(c));
        }
        return best;
    }

    @Test
    void optimalEqualsBruteForceOverAllSubsets() {
        Random r = new Random(11);
        for (int t = 0; t < 120; t++) {
            int span = 1 + r.nextInt(11);
            ScheduleInput in = randomInput(r, randomCurve(r, t), span);
            Scheduler s = new Scheduler(in);
            for (int cap : new int[] {1, 2, 3, span}) {
                Schedule opt = s.optimal(cap);
                assertTrue(opt.count() <= cap);
                double brute = bruteForce(s.simulator(), cap);
                assertEquals(brute, opt.cil(), 1e-9 * Math.max(1, Math.abs(brute)), "case " + t + " cap " + cap + " " + in);
            }
        }
    }

    @Test
    void fixedEqualsBruteForceOverIntervals() {
        Random r = new Random(5);
        for (int t = 0; t < 100; t++) {
            int span = 1 + r.nextInt(60);
            ScheduleInput in = randomInput(r, randomCurve(r, t), span);
            Scheduler s = new Scheduler(in);
            int cap = 1 + r.nextInt(span + 3);
            double best = Double.POSITIVE_INFINITY;
            int bestV = -1;
            for (int v = 1; v <= span; v++) {
                long[] c = new long[span / v];
                if (c.length > cap) {
                    continue;
                }
                for (int i = 0; i < c.length; i++) {
                    c[i] = in.warmup() + (long) (i + 1) * v;
                }
                double cil = s.simulator().cil(c);
                if (cil < best) {
                    best = cil;
                    bestV = v;
                }
            }
            Schedule f = s.fixed(cap);
            assertEquals(best, f.cil(), 0.0, "case " + t);
            assertEquals(in.warmup() + bestV, f.checkpoints()[0], "case " + t + ": ties go to the smaller interval");
        }
    }

    @Test
    void optimalIsNeverWorseThanFixedAdaptiveOrEpochUnderTheSameCap() {
        Random r = new Random(3);
        for (int t = 0; t < 40; t++) {
            int span = 50 + r.nextInt(400);
            ScheduleInput in = randomInput(r, randomCurve(r, t), span);
            Scheduler s = new Scheduler(in);
            int cap = 1 + r.nextInt(30);
            Schedule opt = s.optimal(cap);
            List<Schedule> others = new ArrayList<>(List.of(s.fixed(cap), s.adaptive(s.curveThreshold(), cap),
                    s.adaptive(0.01, cap), s.epoch(1 + r.nextInt(span))));
            for (Schedule o : others) {
                if (o.count() <= cap) {
                    assertTrue(opt.cil() <= o.cil() + 1e-9 * Math.abs(o.cil()), "case " + t + ": " + opt + " vs " + o);
                }
            }
        }
    }

    @Test
    void adaptiveFollowsTheDropRule() {
        // L(i) = 100 - i, threshold 2.5: a checkpoint every 3 iterations after s = 10
        ScheduleInput in = new ScheduleInput(CurveFamily.LIN2.curve(-1, 100), 10, 30, 1e6, 1, 1, 1, 1);
        Scheduler s = new Scheduler(in);
        assertArrayEquals(new long[] {13, 16, 19, 22, 25, 28}, s.adaptive(2.5, 200).checkpoints());
        assertArrayEquals(new long[] {13, 16}, s.adaptive(2.5, 2).checkpoints());
        // drops 3, 1, 2 -> mean 2, population sd sqrt(2/3)
        assertEquals(2 + Math.sqrt(2.0 / 3), Scheduler.adaptiveThreshold(new double[] {10, 7, 6, 4}), 1e-12);
        assertEquals(1.0, s.curveThreshold(), 1e-12);
        assertThrows(ViperConfigException.class, () -> Scheduler.adaptiveThreshold(new double[] {1}));
    }

    @Test
    void epochUsesMultiplesOfTheEpochLength() {
        ScheduleInput in = new ScheduleInput(CurveFamily.LIN2.curve(-1, 100), 10, 40, 1e6, 1, 1, 1, 1);
        assertArrayEquals(new long[] {12, 18, 24, 30, 36}, new Scheduler(in).epoch(6).checkpoints());
        assertThrows(ViperConfigException.class, () -> new Scheduler(in).epoch(0));
        assertThrows(ViperConfigException.class, () -> new Scheduler(in).optimal(0));
        assertThrows(ViperConfigException.class, () -> Scheduler.Algorithm.parse("greedy"));
    }

    @Test
    void hundredThousandIterationsScheduleQuicklyAndDeterministically() {
        ScheduleInput in = new ScheduleInput(CurveFamily.POW3.curve(3, 0.5, 0.2), 20_000, 120_000, 5e6,
                0.05, 0.5, 2.0, 0.002);
        Scheduler s = new Scheduler(in);
        long t0 = System.nanoTime();
        Schedule opt = s.optimal(200);
        Schedule fix = s.fixed(200);
        Schedule ada = s.adaptive(s.curveThreshold(), 200);
        double secs = (System.nanoTime() - t0) / 1e9;
        // about 0.5 s of CPU; generous for a loaded 2-core CI machine
        assertTrue(secs < 10, "took " + secs + " s");
        assertTrue(opt.cil() <= fix.cil() && opt.cil() <= ada.cil(), opt + " " + fix + " " + ada);
        assertEquals(opt, new Scheduler(in).optimal(200));
        assertEquals(ada, new Scheduler(in).adaptive(s.curveThreshold(), 200));
    }

    @Test
    void nonMonotoneCurveAtScaleMatchesItsOwnBound() {
        // Li Chao path at scale: optimal must beat every fixed interval
        LossCurve wavy = new LossCurve() {
            @Override public String name() { return "wavy"; }
            @Override public double[] params() { return new double[0]; }
            @Override public double value(double x) { return 2 + 0.3 * Math.sin(x / 500.0) - x / 1e5; }
        };
        ScheduleInput in = new ScheduleInput(wavy, 1000, 11_000, 1e6, 0.05, 0.3, 1.0, 0.001);
        Scheduler s = new Scheduler(in);
        Schedule opt = s.optimal(30);
        assertTrue(opt.cil() <= s.fixed(30).cil(), opt.toString());
        assertTrue(opt.count() <= 30);
    }
}
