package io.viper.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;

/** How {@code viper bench transfer} prints a {@link TransferBench.Result}: a table, or JSON with every sample. */
public final class BenchReport {
    private BenchReport() {}

    /** One row per size and path: median, p99, GB/s, and latency and stall against the bound. */
    public static void printTable(TransferBench.Result result, PrintStream out) {
        out.println("update latency: publish called to the consumer's swap (every byte verified), between two processes"
                + (result.interval().isPositive()
                        ? ", measured updates " + result.interval().toMillis() + " ms apart"
                        : ""));
        out.printf(
                Locale.ROOT,
                "%-6s %-9s %-9s %7s %9s %9s %9s %7s %8s %9s %10s %11s %7s %9s %7s %7s%n",
                "size",
                "path",
                "transport",
                "changed",
                "memcpy ms",
                "median ms",
                "p99 ms",
                "GB/s",
                "x memcpy",
                "stall ms",
                "stall x mc",
                "announced",
                "copied",
                "moved",
                "reused",
                "warm-up");
        for (TransferBench.Row r : result.rows()) {
            out.printf(
                    Locale.ROOT,
                    "%-6s %-9s %-9s %7s %9s %9s %9s %7.2f %8.2f %9s %10.2f %11s %7s %9s %7s %7d%n",
                    size(r.sizeBytes()),
                    r.path(),
                    r.transport(),
                    percent(r.changed()),
                    ms(r.boundMs()),
                    ms(r.median()),
                    ms(r.p99()),
                    r.gbps(),
                    r.xBound(),
                    ms(r.stallMedian()),
                    r.stallXBound(),
                    ms(r.announcedMedian()),
                    percent(r.copiedMedian() / r.sizeBytes()),
                    percent(r.movedMedian() / r.sizeBytes()),
                    percent(r.reusedMedian() / r.sizeBytes()),
                    r.warmupUpdates());
        }
        for (TransferBench.Row r : result.rows()) {
            result.ofFullUpdate(r)
                    .ifPresent(share -> out.printf(
                            Locale.ROOT,
                            "%s %s, %s of blocks changed: %.1f%% of a full update (x memcpy %.2f against %.2f)%n",
                            size(r.sizeBytes()),
                            r.path(),
                            percent(r.changed()),
                            100 * share,
                            r.xBound(),
                            r.xBound() / share));
        }
        out.println(
                "(median over the measured updates; memcpy: an in-process copy of the model right after each update,"
                        + " median (below 1 ms,");
        out.println(" the fastest copy before the runs); x memcpy: the median of each update's latency (stall) over its"
                + " memcpy;");
        out.println(" announced: publish called to the manifest sent, after staging and hashing;");
        out.println(
                " changed: blocks that changed between versions; copied: the producer's bytes copied into staging and"
                        + " hashed, the rest found");
        out.println(
                " unchanged in the buffer; moved: the consumer's bytes read from the producer; reused: the rest, left"
                        + " in place or copied from the version it held)");
        if (!result.deviceCopyMs().isEmpty()) {
            out.println("(the gpu rows' bound is one device-to-device copy on GPU 0, not memcpy)");
        }
    }

    /**
     * One JSON object: {@code sizes}, {@code memcpy_ms} per size (the fastest before the paths ran), and per row its
     * figures and every sample ({@code samples_ms}, {@code stall_samples_ms}, the memcpy measured with each in
     * {@code bound_samples_ms}; {@code bound_ms} is their median, {@code x_bound} the median of the per-update ratios,
     * {@code x_full} a delta row's share of the full update). With one size, {@code size_bytes} and {@code memcpy_ms}
     * are also the top-level numbers, as before sweeps existed; {@code interval_ms} is the pause before each measured
     * update.
     */
    public static ObjectNode json(TransferBench.Result result) {
        ObjectNode out = new ObjectMapper().createObjectNode();
        ArrayNode sizes = out.putArray("sizes");
        result.memcpyMs().keySet().forEach(sizes::add);
        if (result.memcpyMs().size() == 1) {
            long only = result.memcpyMs().keySet().iterator().next();
            out.put("size_bytes", only);
            out.put("memcpy_ms", fine(result.memcpyMs().get(only)));
            if (result.deviceCopyMs().containsKey(only)) {
                out.put("d2d_ms", round(result.deviceCopyMs().get(only)));
            }
        }
        out.put("interval_ms", result.interval().toMillis());
        ObjectNode memcpy = out.putObject("memcpy_ms_by_size");
        result.memcpyMs().forEach((k, v) -> memcpy.put(Long.toString(k), fine(v)));
        if (!result.deviceCopyMs().isEmpty()) {
            ObjectNode d2d = out.putObject("d2d_ms_by_size");
            result.deviceCopyMs().forEach((k, v) -> d2d.put(Long.toString(k), round(v)));
        }
        ArrayNode rows = out.putArray("results");
        for (TransferBench.Row r : result.rows()) {
            ObjectNode o = rows.addObject();
            o.put("size_bytes", r.sizeBytes());
            o.put("path", r.path());
            o.put("transport", r.transport());
            o.put("bound_ms", fine(r.boundMs()));
            o.put("median_ms", round(r.median()));
            o.put("p90_ms", round(r.p90()));
            o.put("p99_ms", round(r.p99()));
            o.put("gbps", round(r.gbps()));
            o.put("x_bound", round(r.xBound()));
            result.ofFullUpdate(r).ifPresent(share -> o.put("x_full", round(share)));
            o.put("stall_ms", round(r.stallMedian()));
            o.put("stall_x_bound", round(r.stallXBound()));
            o.put("warmup_updates", r.warmupUpdates());
            o.put("first_ms", round(r.firstMs()));
            o.put("announced_ms", round(r.announcedMedian()));
            o.put("changed", round(r.changed()));
            o.put("moved_bytes", Math.round(r.movedMedian()));
            o.put("reused_bytes", Math.round(r.reusedMedian()));
            o.put("copied_bytes", Math.round(r.copiedMedian()));
            samples(o.putArray("samples_ms"), r.latencyMs());
            r.boundSamplesMs().forEach(o.putArray("bound_samples_ms")::add);
            samples(o.putArray("stall_samples_ms"), r.stallMs());
            samples(o.putArray("announced_samples_ms"), r.announcedMs());
            samples(o.putArray("transfer_samples_ms"), r.transferMs());
            samples(o.putArray("verify_samples_ms"), r.verifyMs());
        }
        return out;
    }

    private static void samples(ArrayNode a, List<Double> values) {
        values.forEach(v -> {
            if (Double.isNaN(v)) {
                a.addNull(); // not measured (the polling baseline has no consumer-side breakdown)
            } else {
                a.add(round(v));
            }
        });
    }

    /** A size as the flags write it: 16k, 4m, 1g, or bytes. */
    public static String size(long bytes) {
        String[] units = {"", "k", "m", "g", "t"};
        int u = 0;
        long v = bytes;
        while (u < units.length - 1 && v >= 1024 && v % 1024 == 0) {
            v /= 1024;
            u++;
        }
        return v + units[u];
    }

    /** A fraction as a percentage: 100%, 2.0%, 0.05%. */
    public static String percent(double fraction) {
        double p = fraction * 100;
        return Double.isNaN(p)
                ? "-"
                : p >= 99.95
                        ? "100%"
                        : p >= 0.1 ? String.format(Locale.ROOT, "%.1f%%", p) : String.format(Locale.ROOT, "%.2f%%", p);
    }

    /** Milliseconds with three significant digits at least (0.123, 12.3, 1234). */
    static String ms(double ms) {
        if (Double.isNaN(ms)) {
            return "-";
        }
        return ms < 0.01
                ? String.format(Locale.ROOT, "%.4f", ms)
                : ms < 10
                        ? String.format(Locale.ROOT, "%.3f", ms)
                        : ms < 100 ? String.format(Locale.ROOT, "%.2f", ms) : String.format(Locale.ROOT, "%.1f", ms);
    }

    /** Nanosecond resolution, for the bound of small sizes (a 16 KiB memcpy takes about a microsecond). */
    private static double fine(double d) {
        return Math.round(d * 1e6) / 1e6;
    }

    private static double round(double d) {
        return Math.round(d * 1000) / 1000.0;
    }
}
