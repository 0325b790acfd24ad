package io.viper.cli;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import io.viper.predictor.LossCurve;
import io.viper.scheduler.CheckpointPlanner.Algorithm;
import io.viper.scheduler.Schedule;
import io.viper.scheduler.ScheduleInput;
import java.util.List;
import java.util.Map;

/** {@code viper schedule --json}'s object, written by hand (no tree): stateless. */
final class ScheduleJson {
    private ScheduleJson() {}

    /** The result as JSON; {@code skipped} (the algorithms that could not run, and why) only when there are some. */
    static String json(
            LossCurve curve,
            Double rmse,
            Algorithm algo,
            Schedule chosen,
            Map<Algorithm, Schedule> all,
            Map<Algorithm, String> skipped,
            ScheduleInput in,
            List<String> warnings) {
        StringBuilder sb = new StringBuilder(64 + 8 * chosen.count());
        sb.append("{\"curve\":{\"name\":\"").append(curve.name()).append("\",\"params\":");
        doubles(sb, curve.params());
        sb.append(",\"rmse\":").append(rmse == null ? "null" : num(rmse)).append("},");
        sb.append("\"objective\":\"").append(in.objective().displayName()).append("\",");
        sb.append("\"drift\":").append(num(in.staleness().ratePerIteration())).append(',');
        sb.append("\"algorithm\":\"").append(algo.displayName()).append("\",");
        sb.append("\"checkpoints\":");
        longs(sb, chosen.checkpoints());
        sb.append(",\"cil\":").append(num(chosen.cil()));
        sb.append(",\"overhead_s\":").append(num(chosen.overheadSeconds()));
        sb.append(",\"compare\":{");
        boolean first = true;
        for (Map.Entry<Algorithm, Schedule> e : all.entrySet()) {
            if (!first) {
                sb.append(',');
            }
            first = false;
            Schedule s = e.getValue();
            sb.append('"')
                    .append(e.getKey().displayName())
                    .append("\":{\"cil\":")
                    .append(num(s.cil()))
                    .append(",\"overhead_s\":")
                    .append(num(s.overheadSeconds()))
                    .append(",\"checkpoints\":");
            longs(sb, s.checkpoints());
            sb.append('}');
        }
        sb.append('}');
        if (!skipped.isEmpty()) {
            sb.append(",\"skipped\":{");
            first = true;
            for (Map.Entry<Algorithm, String> e : skipped.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                sb.append('"')
                        .append(e.getKey().displayName())
                        .append("\":\"")
                        .append(JsonStringEncoder.getInstance().quoteAsString(e.getValue()))
                        .append('"');
            }
            sb.append('}');
        }
        if (!warnings.isEmpty()) {
            sb.append(",\"warnings\":[");
            for (int i = 0; i < warnings.size(); i++) {
                sb.append(i > 0 ? ",\"" : "\"")
                        .append(JsonStringEncoder.getInstance().quoteAsString(warnings.get(i)))
                        .append('"');
            }
            sb.append(']');
        }
        sb.append('}');
        return sb.toString();
    }

    private static String num(double v) {
        if (!Double.isFinite(v)) {
            return "null";
        }
        return Double.toString(v);
    }

    private static void doubles(StringBuilder sb, double[] v) {
        sb.append('[');
        for (int i = 0; i < v.length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append(num(v[i]));
        }
        sb.append(']');
    }

    private static void longs(StringBuilder sb, long[] v) {
        sb.append('[');
        for (int i = 0; i < v.length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append(v[i]);
        }
        sb.append(']');
    }
}
