package io.viper.cli.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintStream;
import java.util.Locale;

/**
 * How {@code viper bench fleet} prints a {@link FleetBench.Result}: two tables (per fleet, per consumer), or one JSON
 * object.
 */
public final class FleetReport {
    private static final double MIB = 1 << 20;

    private FleetReport() {}

    /** The link's bound for one consumer: its bytes at the link rate, in ms. */
    public static double boundMs(FleetBench.Result result, FleetBench.Round r) {
        return result.rate().ms(r.newBytes());
    }

    /** The bound of a star: the producer's link sends every consumer's bytes, in ms. */
    public static double starBoundMs(FleetBench.Result result, FleetBench.Round r) {
        return r.consumers() * boundMs(result, r);
    }

    public static void printTable(FleetBench.Result result, PrintStream out) {
        out.println("viper bench fleet: a " + BenchReport.size(result.sizeBytes())
                + " model from a producer (node 0) to N consumers,"
                + " each a viper process of its own (viper consume --paths tcp)");
        out.println("network: " + result.network());
        out.printf(
                Locale.ROOT,
                "%-8s %9s %7s %12s %7s %9s %13s %11s %7s %9s%n",
                "topology",
                "consumers",
                "changed",
                "last swap ms",
                "x one",
                "bound ms",
                "star bound ms",
                "node0 sent",
                "x model",
                "identical");
        for (FleetBench.Round r : result.rounds()) {
            out.printf(
                    Locale.ROOT,
                    "%-8s %9d %7s %12.0f %7s %9.0f %13.0f %11s %7s %9s%n",
                    r.topology().label(),
                    r.consumers(),
                    BenchReport.percent(r.changed()),
                    r.lastSwapMs(),
                    result.oneConsumerMs(r).stream()
                            .mapToObj(one -> String.format(Locale.ROOT, "%.2f", r.lastSwapMs() / one))
                            .findFirst()
                            .orElse("-"),
                    boundMs(result, r),
                    starBoundMs(result, r),
                    r.producerTxBytes().isPresent()
                            ? String.format(
                                    Locale.ROOT, "%.1f MiB", r.producerTxBytes().getAsLong() / MIB)
                            : "-",
                    r.producerTxBytes().isPresent()
                            ? String.format(
                                    Locale.ROOT, "%.2f", r.producerTxBytes().getAsLong() / (double) result.sizeBytes())
                            : "-",
                    r.swaps().stream().filter(FleetBench.Swap::identical).count() + "/"
                            + r.swaps().size() + (r.killed() > 0 ? " (node " + r.killed() + " killed)" : ""));
        }
        out.println();
        out.printf(
                Locale.ROOT,
                "%-8s %9s %7s %5s %11s %11s %11s %13s %11s %-5s %9s%n",
                "topology",
                "consumers",
                "changed",
                "node",
                "latency ms",
                "moved MiB",
                "reused MiB",
                "producer MiB",
                "relays MiB",
                "path",
                "identical");
        for (FleetBench.Round r : result.rounds()) {
            for (FleetBench.Swap s : r.swaps()) {
                out.printf(
                        Locale.ROOT,
                        "%-8s %9d %7s %5d %11.0f %11.1f %11.1f %13.1f %11.1f %-5s %9s%n",
                        r.topology().label(),
                        r.consumers(),
                        BenchReport.percent(r.changed()),
                        s.node(),
                        s.latencyMs(),
                        s.bytes() / MIB,
                        s.reused() / MIB,
                        s.fromProducer() / MIB,
                        s.fromRelays() / MIB,
                        s.path(),
                        s.identical() ? "yes" : "NO");
            }
        }
        out.println(
                "(latency: the producer's publish call to the consumer's swap, every byte verified, by the wall clock"
                        + " all processes here share;");
        out.println(" last swap: the fleet's slowest; x one: against the fleet of one consumer in this run; bound: the"
                + " bytes one consumer receives");
        out.println(
                " at the link rate; star bound: N times that, what the producer's link sends when every consumer reads"
                        + " from it;");
        out.println(
                " node0 sent: bytes node 0's link sent while the consumers took the version, broker included; x model:"
                        + " that in model sizes;");
        out.println(" identical: consumers whose tensors are the published ones, byte for byte; changed: the share of"
                + " blocks asked to change, 100% the first version;");
        out.println(" a delta's bounds count the bytes of the blocks that did change, at least one; producer MiB and"
                + " relays MiB: where a consumer's bytes came from)");
        if (!result.capped()) {
            out.println("(links NOT capped: the processes talk over loopback, so the bounds do not apply and node 0's"
                    + " bytes are not counted)");
        }
    }

    /** One JSON object: the run's settings, and per round its figures with every consumer's. */
    public static ObjectNode json(FleetBench.Result result) {
        ObjectNode o = new ObjectMapper().createObjectNode();
        o.put("size_bytes", result.sizeBytes());
        o.put("link_rate", result.rate().text());
        o.put("link_bits_per_second", result.rate().bitsPerSecond());
        o.put("capped", result.capped());
        o.put("network", result.network());
        ArrayNode rounds = o.putArray("rounds");
        for (FleetBench.Round r : result.rounds()) {
            ObjectNode j = rounds.addObject();
            j.put("topology", r.topology().label());
            j.put("consumers", r.consumers());
            j.put("changed", r.changed());
            j.put("new_bytes", r.newBytes());
            j.put("last_swap_ms", round(r.lastSwapMs()));
            result.oneConsumerMs(r).ifPresent(one -> j.put("x_one_consumer", round(r.lastSwapMs() / one)));
            j.put("bound_ms", round(boundMs(result, r)));
            j.put("star_bound_ms", round(starBoundMs(result, r)));
            if (r.producerTxBytes().isPresent()) {
                j.put("producer_tx_bytes", r.producerTxBytes().getAsLong());
            } else {
                j.putNull("producer_tx_bytes");
            }
            j.put("identical", r.allIdentical());
            j.put("killed_node", r.killed());
            ArrayNode swaps = j.putArray("swaps");
            for (FleetBench.Swap s : r.swaps()) {
                ObjectNode w = swaps.addObject();
                w.put("node", s.node());
                w.put("version", s.version());
                w.put("latency_ms", round(s.latencyMs()));
                w.put("path", s.path());
                w.put("bytes", s.bytes());
                w.put("reused_bytes", s.reused());
                w.put("bytes_from_producer", s.fromProducer());
                w.put("bytes_from_relays", s.fromRelays());
                w.put("identical", s.identical());
            }
        }
        return o;
    }

    private static double round(double d) {
        return Math.round(d * 1000) / 1000.0;
    }
}
