package io.viper.cli;

import io.viper.cli.bench.BenchReport;
import io.viper.cli.bench.FleetBench;
import io.viper.cli.bench.FleetReport;
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
 * The chart of {@code viper bench fleet --plot}: the last consumer's swap against the number of consumers, with the
 * links' bounds.
 */
final class FleetPlot {
    private FleetPlot() {}

    static void write(Path file, FleetBench.Result result) {
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder()
                .width(1000)
                .height(640)
                .title("viper bench fleet: " + BenchReport.size(result.sizeBytes()) + ", links "
                        + (result.capped() ? result.rate().text() : "not capped"))
                .xAxisTitle("consumers")
                .yAxisTitle("publish to the last swap (s)")
                .build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setPlotGridLinesColor(new Color(225, 225, 225));
        chart.getStyler().setMarkerSize(7);
        Map<String, List<FleetBench.Round>> series = new LinkedHashMap<>();
        for (FleetBench.Round r : result.rounds()) {
            String what =
                    r.changed() >= 1 ? "a whole version" : BenchReport.percent(r.changed()) + " of blocks changed";
            series.computeIfAbsent(r.topology().label() + ", " + what, k -> new ArrayList<>())
                    .add(r);
        }
        boolean bounded = false;
        for (Map.Entry<String, List<FleetBench.Round>> e : series.entrySet()) {
            List<FleetBench.Round> rs = e.getValue();
            double[] x = rs.stream().mapToDouble(FleetBench.Round::consumers).toArray();
            chart.addSeries(
                            e.getKey(),
                            x,
                            rs.stream().mapToDouble(r -> r.lastSwapMs() / 1e3).toArray())
                    .setMarker(SeriesMarkers.CIRCLE);
            if (result.capped() && rs.getFirst().changed() >= 1 && !bounded) {
                bounded = true;
                XYSeries bound = chart.addSeries(
                        "star bound (N x size / rate)",
                        x,
                        rs.stream()
                                .mapToDouble(r -> FleetReport.starBoundMs(result, r) / 1e3)
                                .toArray());
                bound.setMarker(SeriesMarkers.NONE);
                bound.setLineColor(new Color(60, 60, 60));
                bound.setLineStyle(new BasicStroke(
                        1.5f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
            }
        }
        ChartFiles.save(chart, file);
    }
}
