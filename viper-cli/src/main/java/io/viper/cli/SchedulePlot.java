package io.viper.cli;

import io.viper.predictor.LossCurve;
import io.viper.scheduler.Schedule;
import io.viper.scheduler.ScheduleInput;
import java.awt.BasicStroke;
import java.awt.Color;
import java.nio.file.Path;
import java.util.Locale;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The chart of {@code viper schedule --plot}: observed losses, the curve, the warm-up end and the checkpoints (a rug of
 * iterations along the bottom and the predicted loss at each).
 */
final class SchedulePlot {
    private static final int MAX_POINTS = 4000;

    private SchedulePlot() {}

    /** Fails early for an extension other than .png or .svg, or a missing directory. */
    static void checkPath(Path file) {
        ChartFiles.checkPath(file);
    }

    static void write(
            Path file,
            LossLog log,
            LossCurve curve,
            ScheduleInput in,
            Schedule schedule,
            String curveLabel,
            Double rmse) {
        ChartFiles.save(chart(log, curve, in, schedule, curveLabel, rmse), file);
    }

    static XYChart chart(
            LossLog log, LossCurve curve, ScheduleInput in, Schedule schedule, String curveLabel, Double rmse) {
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder()
                .width(1100)
                .height(620)
                .title(schedule.algorithm() + " schedule: " + schedule.count() + " checkpoints, predicted CIL "
                        + String.format(Locale.ROOT, "%.6g", schedule.cil()) + ", overhead "
                        + String.format(Locale.ROOT, "%.4g", schedule.overheadSeconds()) + " s;  " + curveLabel
                        + curve.name()
                        + (rmse == null ? "" : String.format(Locale.ROOT, " RMSE %.3g", rmse)))
                .xAxisTitle("training iteration")
                .yAxisTitle("training loss")
                .build();
        org.knowm.xchart.style.XYStyler st = chart.getStyler();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNE);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setPlotGridLinesColor(new Color(225, 225, 225));
        st.setMarkerSize(4);

        double xMin = in.warmup();
        double yMin = Double.POSITIVE_INFINITY;
        double yMax = Double.NEGATIVE_INFINITY;
        if (log != null) {
            int n = log.iterations().length;
            int step = Math.max(1, n / MAX_POINTS);
            int m = (n + step - 1) / step;
            double[] x = new double[m];
            double[] y = new double[m];
            for (int i = 0, k = 0; i < n; i += step, k++) {
                x[k] = log.iterations()[i];
                y[k] = log.losses()[i];
                yMin = Math.min(yMin, y[k]);
                yMax = Math.max(yMax, y[k]);
            }
            xMin = Math.min(xMin, x[0]);
            XYSeries obs = chart.addSeries("observed loss" + (step > 1 ? " (every " + step + "th)" : ""), x, y);
            obs.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
            obs.setMarker(SeriesMarkers.CIRCLE);
            obs.setMarkerColor(new Color(120, 140, 170, 110));
        }
        double from = Math.max(xMin, 1);
        int pts = 800;
        double[] cx = new double[pts];
        double[] cy = new double[pts];
        for (int i = 0; i < pts; i++) {
            cx[i] = from + (in.end() - from) * i / (pts - 1.0);
            cy[i] = curve.value(cx[i]);
        }
        for (int i = 0; i < pts; i++) {
            // with observed losses, the curve's own range counts from the warm-up end on, so that a
            // steep start (a power law near x = 0) does not squash the chart
            if (Double.isFinite(cy[i]) && (log == null || cx[i] >= in.warmup())) {
                yMin = Math.min(yMin, cy[i]);
                yMax = Math.max(yMax, cy[i]);
            }
        }
        XYSeries fitted = chart.addSeries(curveLabel + curve.name() + " curve", cx, cy);
        fitted.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        fitted.setMarker(SeriesMarkers.NONE);
        fitted.setLineColor(new Color(200, 40, 40));
        fitted.setLineWidth(2.5f);

        // Losses fall by orders of magnitude after the warm-up: on a linear axis the rest is a flat line at the bottom.
        // A log axis where they are all positive, its margins then ratios.
        boolean logY = yMin > 0;
        double pad = logY ? Math.max(1.01, Math.pow(yMax / yMin, 0.05)) : (yMax - yMin) * 0.05 + 1e-12;
        double lo = logY ? yMin / Math.pow(pad, 2.5) : yMin - 2.5 * pad;
        double hi = logY ? yMax * pad : yMax + pad;
        XYSeries warm = chart.addSeries(
                "warm-up end (iteration " + in.warmup() + ")",
                new double[] {in.warmup(), in.warmup()},
                new double[] {lo, hi});
        warm.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
        warm.setMarker(SeriesMarkers.NONE);
        warm.setLineColor(new Color(60, 60, 60));
        warm.setLineStyle(
                new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));

        long[] c = schedule.checkpoints();
        if (c.length > 0) {
            // a rug of checkpoint iterations along the bottom, and a marker where each meets the curve
            double[] kx = new double[c.length];
            double[] ky = new double[c.length];
            double[] rug = new double[c.length];
            for (int i = 0; i < c.length; i++) {
                kx[i] = c[i];
                ky[i] = curve.value((double) c[i]);
                rug[i] = logY ? yMin / Math.pow(pad, 1.5) : yMin - 1.5 * pad;
            }
            XYSeries ck = chart.addSeries(schedule.algorithm() + " checkpoint iterations (" + c.length + ")", kx, rug);
            ck.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
            ck.setMarker(SeriesMarkers.TRIANGLE_UP);
            ck.setMarkerColor(new Color(20, 110, 40));
            XYSeries on = chart.addSeries("predicted loss at each checkpoint", kx, ky);
            on.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
            on.setMarker(SeriesMarkers.CIRCLE);
            on.setMarkerColor(new Color(20, 110, 40, 150));
        }
        st.setYAxisMin(lo);
        st.setYAxisMax(hi);
        st.setXAxisMin(xMin);
        st.setXAxisMax((double) in.end());
        st.setXAxisDecimalPattern("#,##0");
        st.setYAxisLogarithmic(logY);
        return chart;
    }
}
