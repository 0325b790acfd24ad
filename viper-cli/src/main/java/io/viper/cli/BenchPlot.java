package io.viper.cli;

import io.viper.cli.bench.TransferBench;
import java.awt.BasicStroke;
import java.awt.Color;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The chart of {@code viper bench transfer --plot}: median update latency against model size, both axes logarithmic,
 * one line per path with its p99 as a band of markers, and the memcpy bound.
 */
final class BenchPlot {
    private static final Color[] PALETTE = {
        new Color(31, 119, 180),
        new Color(214, 39, 40),
        new Color(44, 160, 44),
        new Color(148, 103, 189),
        new Color(255, 127, 14),
        new Color(140, 86, 75)
    };

    private static final double MIB = 1024.0 * 1024;

    private BenchPlot() {}

    static void write(Path file, TransferBench.Result result) {
        ChartFiles.save(chart(result), file);
    }

    /**
     * The chart: sizes in MiB and latencies in ms, both on log axes with plain decimal ticks (not 1E6); one legend
     * entry per path (its median, a line with circles), its p99 the triangles of the same colour, said in the title.
     */
    static XYChart chart(TransferBench.Result result) {
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder()
                .width(1000)
                .height(640)
                .title("viper bench transfer: publish called to the consumer's swap, two processes;"
                        + " circles: median, triangles: p99")
                .xAxisTitle("model size (MiB, log)")
                .yAxisTitle("latency (ms, log)")
                .build();
        chart.getStyler().setXAxisLogarithmic(true);
        chart.getStyler().setYAxisLogarithmic(true);
        chart.getStyler().setXAxisDecimalPattern("#,##0.###");
        chart.getStyler().setYAxisDecimalPattern("#,##0.###");
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setPlotGridLinesColor(new Color(225, 225, 225));
        chart.getStyler().setMarkerSize(7);

        Map<String, List<TransferBench.Row>> byPath = new LinkedHashMap<>();
        for (TransferBench.Row r : result.rows()) {
            byPath.computeIfAbsent(r.path() + " (" + r.transport() + ")", k -> new ArrayList<>())
                    .add(r);
        }
        int i = 0;
        for (Map.Entry<String, List<TransferBench.Row>> e : byPath.entrySet()) {
            Color color = PALETTE[i++ % PALETTE.length];
            List<TransferBench.Row> rows = e.getValue();
            double[] x = rows.stream().mapToDouble(r -> r.sizeBytes() / MIB).toArray();
            XYSeries median = chart.addSeries(
                    e.getKey(),
                    x,
                    rows.stream().mapToDouble(TransferBench.Row::median).toArray());
            median.setMarker(SeriesMarkers.CIRCLE);
            median.setLineColor(color);
            median.setMarkerColor(color);
            XYSeries p99 = chart.addSeries(
                    e.getKey() + " p99",
                    x,
                    rows.stream().mapToDouble(TransferBench.Row::p99).toArray());
            p99.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
            p99.setMarker(SeriesMarkers.TRIANGLE_UP);
            p99.setMarkerColor(color);
            p99.setShowInLegend(false);
        }
        double[] sizes =
                result.memcpyMs().keySet().stream().mapToDouble(b -> b / MIB).toArray();
        double[] bound = result.memcpyMs().values().stream()
                .mapToDouble(v -> Math.max(v, 1e-4))
                .toArray();
        XYSeries memcpy = chart.addSeries("memcpy (fastest, before the runs)", sizes, bound);
        memcpy.setMarker(SeriesMarkers.NONE);
        memcpy.setLineColor(new Color(60, 60, 60));
        memcpy.setLineStyle(
                new BasicStroke(1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
        return chart;
    }
}
