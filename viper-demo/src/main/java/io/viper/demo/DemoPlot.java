package io.viper.demo;

import io.viper.errors.ViperConfigException;
import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The chart of {@code viper demo --plot}: the mean loss of the requests served in each window of training iterations,
 * one line per policy, and each policy's checkpoint moments as ticks in a strip of its own below the lines.
 */
public final class DemoPlot {
    private static final Color[] COLORS = {
        new Color(200, 80, 30),
        new Color(30, 110, 200),
        new Color(20, 150, 70),
        new Color(140, 60, 170),
        new Color(210, 160, 0),
        new Color(0, 160, 160),
        new Color(110, 110, 110),
    };
    private static final int WINDOWS = 90;

    private DemoPlot() {}

    /**
     * Draws {@code result} into the PNG {@code file}.
     *
     * @throws ViperConfigException naming the file when it cannot be written
     */
    public static void write(Path file, DemoResult result) {
        DemoSettings s = result.settings();
        List<PolicyOutcome> outcomes = result.outcomes();
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder()
                .width(1400)
                .height(700)
                .title(String.format(
                        Locale.ROOT,
                        "viper demo: loss of the served requests (mean per %d iterations, over %d replicas), %s"
                                + " workload, seed %d, %s",
                        window(s),
                        s.replicas(),
                        s.workload().displayName(),
                        s.seed(),
                        s.transport().displayName()))
                .xAxisTitle("training iteration (the stream position requests are drawn at)")
                .yAxisTitle("cross-entropy of served requests (below 0: checkpoint moments)")
                .build();
        var st = chart.getStyler();
        st.setLegendPosition(Styler.LegendPosition.OutsideE);
        st.setChartBackgroundColor(Color.WHITE);
        st.setPlotGridLinesColor(new Color(225, 225, 225));
        st.setMarkerSize(7);
        st.setXAxisDecimalPattern("#,##0");

        double yMax = 0;
        long w = window(s);
        List<double[][]> curves = new ArrayList<>();
        for (PolicyOutcome o : outcomes) {
            double[][] c = windows(s, o.losses(), w);
            curves.add(c);
            for (double y : c[1]) {
                yMax = Math.max(yMax, y);
            }
        }
        yMax = Math.max(0.5, Math.ceil(yMax * 10) / 10);
        double band = yMax * 0.05; // height of one policy's checkpoint strip
        for (int i = 0; i < outcomes.size(); i++) {
            PolicyOutcome o = outcomes.get(i);
            Color color = COLORS[i % COLORS.length];
            double[][] c = curves.get(i);
            XYSeries line = chart.addSeries(String.format(Locale.ROOT, "%s: CIL %.1f", o.name(), o.cil()), c[0], c[1]);
            line.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
            line.setMarker(SeriesMarkers.NONE);
            line.setLineColor(color);
            // none is drawn dashed so that a policy with the same losses (e.g. no checkpoints) shows through
            line.setLineStyle(
                    o.policy() == DemoPolicy.NONE
                            ? new BasicStroke(
                                    1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {7f, 5f}, 0f)
                            : new BasicStroke(2.0f));
            long[] cp = o.publishedIterations();
            if (cp.length > 0) {
                double[] x = new double[cp.length];
                double[] y = new double[cp.length];
                for (int k = 0; k < cp.length; k++) {
                    x[k] = cp[k];
                    y[k] = -band * (i + 1);
                }
                XYSeries ticks =
                        chart.addSeries(String.format(Locale.ROOT, "%s: %d checkpoints", o.name(), cp.length), x, y);
                ticks.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
                ticks.setMarker(SeriesMarkers.TRIANGLE_UP);
                ticks.setMarkerColor(color);
            }
        }
        st.setYAxisMin(-band * (outcomes.size() + 1));
        st.setYAxisMax(yMax);
        st.setXAxisMin((double) s.warmup());
        st.setXAxisMax((double) s.end());
        st.setYAxisDecimalPattern("0.0");
        try {
            BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
        } catch (IOException e) {
            throw new ViperConfigException("--plot " + file + ": cannot write (" + e.getMessage() + ")", e);
        }
    }

    private static long window(DemoSettings s) {
        return Math.max(1, (s.end() - s.warmup()) / WINDOWS);
    }

    /** Mean loss of the requests in each window of {@code w} positions: {x = window centre, y = mean}. */
    private static double[][] windows(DemoSettings s, double[] losses, long w) {
        int n = (int) ((s.end() - s.warmup() + w - 1) / w);
        double[] sum = new double[n];
        int[] count = new int[n];
        for (int k = 0; k < losses.length; k++) {
            long pos = Requests.position(s.warmup(), k, s.rate(), s.paceNanos());
            int b = (int) Math.min(n - 1, (pos - s.warmup()) / w);
            sum[b] += losses[k];
            count[b]++;
        }
        List<double[]> pts = new ArrayList<>();
        for (int b = 0; b < n; b++) {
            if (count[b] > 0) {
                pts.add(new double[] {s.warmup() + (b + 0.5) * w, sum[b] / count[b]});
            }
        }
        double[][] out = new double[2][pts.size()];
        for (int i = 0; i < pts.size(); i++) {
            out[0][i] = pts.get(i)[0];
            out[1][i] = pts.get(i)[1];
        }
        return out;
    }
}
