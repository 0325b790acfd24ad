package io.viper.scheduler;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.predictor.CurveFamily;
import io.viper.predictor.LossCurve;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class CheckpointPlannerTest {

    static Schedule fixed(CheckpointPlanner p, int cap) {
        return new FixedAlgorithm(cap).schedule(p.simulator());
    }

    static Schedule adaptive(CheckpointPlanner p, double threshold, int cap) {
        return new AdaptiveAlgorithm(threshold, cap).schedule(p.simulator());
    }

    /** The exact optimum (no preference for even spacing). */
    static Schedule optimal(CheckpointPlanner p, int cap) {
        return new OptimalAlgorithm(cap, 0).schedule(p.simulator());
    }

    static Schedule epoch(CheckpointPlanner p, long epochIters) {
        return new EpochAlgorithm(epochIters).schedule(p.simulator());
    }

    /** A random small input; about half of them run out of requests before e. */
    static ScheduleInput randomInput(Random r, LossCurve curve, int span) {
        long s = 2L + r.nextInt(5);
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
            default ->
                new LossCurve() {
                    final double a = r.nextDouble();

                    @Override
                    public String name() {
                        return "wavy";
                    }

                    @Override
                    public double[] params() {
                        return new double[] {a};
                    }

                    @Override
                    public double value(double x) {
                        return 2 + Math.sin(x * (0.7 + a)) - 0.05 * x;
                    }
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
            CheckpointPlanner s = new CheckpointPlanner(in);
            for (int cap : new int[] {1, 2, 3, span}) {
                Schedule opt = optimal(s, cap);
                assertTrue(opt.count() <= cap);
                double brute = bruteForce(s.simulator(), cap);
                assertEquals(
                        brute, opt.cil(), 1e-9 * Math.max(1, Math.abs(brute)), "case " + t + " cap " + cap + " " + in);
            }
        }
    }

    @Test
    void fixedEqualsBruteForceOverIntervals() {
        Random r = new Random(5);
        for (int t = 0; t < 100; t++) {
            int span = 1 + r.nextInt(60);
            ScheduleInput in = randomInput(r, randomCurve(r, t), span);
            CheckpointPlanner s = new CheckpointPlanner(in);
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
            Schedule f = fixed(s, cap);
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
            CheckpointPlanner s = new CheckpointPlanner(in);
            int cap = 1 + r.nextInt(30);
            Schedule opt = optimal(s, cap);
            List<Schedule> others = new ArrayList<>(List.of(
                    fixed(s, cap),
                    adaptive(s, s.curveThreshold(), cap),
                    adaptive(s, 0.01, cap),
                    epoch(s, 1 + r.nextInt(span))));
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
        CheckpointPlanner s = new CheckpointPlanner(in);
        assertArrayEquals(
                new long[] {13, 16, 19, 22, 25, 28}, adaptive(s, 2.5, 200).checkpoints());
        assertArrayEquals(new long[] {13, 16}, adaptive(s, 2.5, 2).checkpoints());
        // drops 3, 1, 2 -> mean 2, population sd sqrt(2/3)
        assertEquals(2 + Math.sqrt(2.0 / 3), CheckpointPlanner.adaptiveThreshold(new double[] {10, 7, 6, 4}), 1e-12);
        assertEquals(1.0, s.curveThreshold(), 1e-12);
        assertThrows(ViperConfigException.class, () -> CheckpointPlanner.adaptiveThreshold(new double[] {1}));
    }

    @Test
    void epochUsesMultiplesOfTheEpochLength() {
        ScheduleInput in = new ScheduleInput(CurveFamily.LIN2.curve(-1, 100), 10, 40, 1e6, 1, 1, 1, 1);
        assertArrayEquals(
                new long[] {12, 18, 24, 30, 36},
                epoch(new CheckpointPlanner(in), 6).checkpoints());
        assertThrows(ViperConfigException.class, () -> epoch(new CheckpointPlanner(in), 0));
        assertThrows(ViperConfigException.class, () -> optimal(new CheckpointPlanner(in), 0));
        assertThrows(ViperConfigException.class, () -> CheckpointPlanner.Algorithm.parse("greedy"));
    }

    @Test
    void hundredThousandIterationsScheduleDeterministically() {
        ScheduleInput in =
                new ScheduleInput(CurveFamily.POW3.curve(3, 0.5, 0.2), 20_000, 120_000, 5e6, 0.05, 0.5, 2.0, 0.002);
        CheckpointPlanner s = new CheckpointPlanner(in);
        Schedule opt = optimal(s, 200);
        Schedule fix = fixed(s, 200);
        Schedule ada = adaptive(s, s.curveThreshold(), 200);
        assertTrue(opt.cil() <= fix.cil() && opt.cil() <= ada.cil(), opt + " " + fix + " " + ada);
        assertEquals(opt, optimal(new CheckpointPlanner(in), 200));
        assertEquals(ada, adaptive(new CheckpointPlanner(in), s.curveThreshold(), 200));
    }

    @Test
    void planRunsTheAskedAlgorithmsInTheGivenOrder() {
        ScheduleInput in =
                new ScheduleInput(CurveFamily.EXP3.curve(2, 0.01, 0.3), 100, 600, 2e5, 0.05, 0.4, 1.5, 0.002);
        CheckpointPlanner s = new CheckpointPlanner(in);
        CheckpointPlanner.Options o = new CheckpointPlanner.Options(20, s.curveThreshold(), 50);
        Set<CheckpointPlanner.Algorithm> asked = new LinkedHashSet<>(List.of(
                CheckpointPlanner.Algorithm.NONE,
                CheckpointPlanner.Algorithm.EPOCH,
                CheckpointPlanner.Algorithm.OPTIMAL));
        Map<CheckpointPlanner.Algorithm, Schedule> plan = s.plan(asked, o);
        assertEquals(List.copyOf(asked), List.copyOf(plan.keySet()));
        assertEquals(new OptimalAlgorithm(20).schedule(s.simulator()), plan.get(CheckpointPlanner.Algorithm.OPTIMAL));
        assertEquals(epoch(s, 50), plan.get(CheckpointPlanner.Algorithm.EPOCH));
        Schedule none = plan.get(CheckpointPlanner.Algorithm.NONE);
        assertEquals("none", none.algorithm());
        assertEquals(0, none.count());
        assertEquals(s.simulator().cil(new long[0]), none.cil(), 0.0);
        // every algorithm has a name the parser takes back, and the error lists them all
        for (CheckpointPlanner.Algorithm a : CheckpointPlanner.Algorithm.values()) {
            assertEquals(
                    a, CheckpointPlanner.Algorithm.parse(" " + a.displayName().toUpperCase(Locale.ROOT)));
            assertEquals(a.displayName(), s.schedule(a, o).algorithm());
        }
        assertEquals("fixed, adaptive, optimal, online, epoch, none", CheckpointPlanner.Algorithm.names());
        ViperConfigException e =
                assertThrows(ViperConfigException.class, () -> CheckpointPlanner.Algorithm.parse("greedy"));
        assertTrue(e.getMessage().endsWith("known: fixed, adaptive, optimal, online, epoch, none"), e.getMessage());
    }

    @Test
    void nonMonotoneCurveAtScaleMatchesItsOwnBound() {
        // Li Chao path at scale: optimal must beat every fixed interval
        LossCurve wavy = new LossCurve() {
            @Override
            public String name() {
                return "wavy";
            }

            @Override
            public double[] params() {
                return new double[0];
            }

            @Override
            public double value(double x) {
                return 2 + 0.3 * Math.sin(x / 500.0) - x / 1e5;
            }
        };
        ScheduleInput in = new ScheduleInput(wavy, 1000, 11_000, 1e6, 0.05, 0.3, 1.0, 0.001);
        CheckpointPlanner s = new CheckpointPlanner(in);
        Schedule opt = optimal(s, 30);
        assertTrue(opt.cil() <= fixed(s, 30).cil(), opt.toString());
        assertTrue(opt.count() <= 30);
    }

    @Test
    void everyAlgorithmPlansTheSameForLossesScaledNearTheEndsOfADoublesRange() {
        // powers of two scale the curve exactly; the algorithms are linear in the losses, so nothing may move
        Map<CheckpointPlanner.Algorithm, Schedule> unit = planAll(2, 0.3);
        for (int shift : new int[] {660, -660}) {
            Map<CheckpointPlanner.Algorithm, Schedule> scaled = planAll(Math.scalb(2.0, shift), Math.scalb(0.3, shift));
            for (CheckpointPlanner.Algorithm a : unit.keySet()) {
                assertArrayEquals(unit.get(a).checkpoints(), scaled.get(a).checkpoints(), a + " at 2^" + shift);
                assertEquals(
                        Math.scalb(unit.get(a).cil(), shift),
                        scaled.get(a).cil(),
                        Math.abs(scaled.get(a).cil()) * 1e-12,
                        a.toString());
            }
        }
    }

    private static Map<CheckpointPlanner.Algorithm, Schedule> planAll(double a, double c) {
        ScheduleInput in =
                new ScheduleInput(CurveFamily.EXP3.curve(a, 0.001, c), 200, 2000, 1e5, 0.01, 0.1, 0.2, 0.001);
        CheckpointPlanner p = new CheckpointPlanner(in);
        return p.plan(
                EnumSet.allOf(CheckpointPlanner.Algorithm.class),
                new CheckpointPlanner.Options(200, p.curveThreshold(), 180));
    }

    @Test
    void aCurveWhoseCilPassesTheRangeOfADoubleIsRefusedInOneLine() {
        for (LossCurve curve :
                new LossCurve[] {CurveFamily.EXP3.curve(1e308, 1e308, 1e308), CurveFamily.EXP3.curve(-2, 0.001, -1e304)
                }) {
            String m = assertThrows(
                            ViperConfigException.class,
                            () -> new CheckpointPlanner(
                                    new ScheduleInput(curve, 200, 2000, 1e5, 0.01, 0.1, 0.2, 0.001)))
                    .getMessage();
            assertTrue(
                    m.startsWith("schedule: the cumulative inference loss would pass the range of a double: curve "
                            + curve.name()),
                    m);
        }
    }
}
