package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.cli.bench.TransferBench;
import io.viper.predictor.LossCurve;
import io.viper.scheduler.Schedule;
import io.viper.scheduler.ScheduleInput;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.DoubleUnaryOperator;
import org.junit.jupiter.api.Test;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYSeries;

/**
 * The charts read at a glance: sizes in MiB with decimal ticks (not 1E6), one legend entry per path, and a loss axis
 * that is logarithmic so that the losses after the warm-up are not a flat line.
 */
class PlotsTest {
    @Test
    void theBenchChartHasMibTicksAndOneLegendEntryPerPath() {
        List<Double> ms = List.of(1.0, 2.0, 3.0);
        List<TransferBench.Row> rows = List.of(row(1L << 20, ms), row(64L << 20, ms));
        XYChart chart = BenchPlot.chart(
                new TransferBench.Result(Map.of(1L << 20, 0.1, 64L << 20, 5.0), Map.of(), rows, Duration.ZERO));
        assertTrue(chart.getStyler().isXAxisLogarithmic());
        assertEquals("#,##0.###", chart.getStyler().getXAxisDecimalPattern());
        assertEquals("model size (MiB, log)", chart.getXAxisTitle());
        XYSeries host = chart.getSeriesMap().get("host (ucx)");
        assertArrayEquals(new double[] {1, 64}, host.getXData(), 1e-9);
        List<String> legend = chart.getSeriesMap().values().stream()
                .filter(XYSeries::isShowInLegend)
                .map(XYSeries::getName)
                .toList();
        assertEquals(List.of("host (ucx)", "memcpy (fastest, before the runs)"), legend);
    }

    @Test
    void theScheduleChartPutsPositiveLossesOnALogAxis() {
        LossCurve curve = curve(x -> 2 * Math.exp(-0.01 * x) + 0.001);
        ScheduleInput in = new ScheduleInput(curve, 100, 2000, 1000, 1, 1, 1, 0.01);
        Schedule schedule = new Schedule("optimal", new long[] {500, 1000}, 1.0, 2.0, "");
        XYChart chart = SchedulePlot.chart(null, curve, in, schedule, "fitted ", null);
        assertTrue(chart.getStyler().isYAxisLogarithmic(), "losses span orders of magnitude");
        assertTrue(chart.getStyler().getYAxisMin() > 0, "a log axis starts above 0");
        assertFalse(
                SchedulePlot.chart(null, curve(x -> 0), in, schedule, "fitted ", null)
                        .getStyler()
                        .isYAxisLogarithmic(),
                "a loss of 0 stays on a linear axis");
    }

    private static LossCurve curve(DoubleUnaryOperator f) {
        return new LossCurve() {
            @Override
            public String name() {
                return "exp3";
            }

            @Override
            public double[] params() {
                return new double[] {2, 0.01, 0.001};
            }

            @Override
            public double value(double x) {
                return f.applyAsDouble(x);
            }
        };
    }

    private static TransferBench.Row row(long size, List<Double> ms) {
        return new TransferBench.Row(size, "host", "ucx", ms, 4, 1.0, ms, ms, ms, ms, ms, 1.0, ms, ms, ms);
    }
}
