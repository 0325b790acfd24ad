package io.viper.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The bench's ratios: each update against the memcpy measured with it, and a delta row against the full update of the
 * same size and path, so that a stretch in which the machine's memory was slow moves both sides of a ratio.
 */
class BenchReportTest {
    private static TransferBench.Row row(String path, double changed, List<Double> latency, List<Double> bound) {
        List<Double> stall = latency.stream().map(l -> l / 4).toList();
        List<Double> zeros = latency.stream().map(l -> 0.0).toList();
        return new TransferBench.Row(
                1L << 30, path, "ucx", bound, 4, 1000, latency, stall, latency, latency, zeros, changed, zeros, zeros,
                zeros);
    }

    /** Full updates: 120 ms while memcpy took 60, then 180 while memcpy took 90: twice the bound throughout. */
    private static final TransferBench.Row FULL =
            row("host", 1.0, List.of(120.0, 122.0, 180.0, 184.0, 186.0), List.of(60.0, 61.0, 90.0, 92.0, 93.0));
    /** The 2% delta, measured while memcpy took 60: 24 ms, 0.4 of the bound. */
    private static final TransferBench.Row DELTA =
            row("host", 0.02, List.of(24.0, 24.0, 24.0), List.of(60.0, 60.0, 60.0));

    @Test
    void eachUpdateIsComparedWithTheMemcpyMeasuredWithIt() {
        assertEquals(2.0, FULL.xBound(), 1e-9, "the median of the per-update ratios");
        assertEquals(0.5, FULL.stallXBound(), 1e-9);
        assertEquals(90.0, FULL.boundMs(), 1e-9, "the median bound");
        // the unpaired ratio, median latency over median bound, would say 180 / 90 here by chance; over a slow first
        // bound it says more
        assertEquals(2.0, TransferBench.pairedMedian(List.of(10.0, 40.0, 90.0), List.of(5.0, 20.0, 45.0)), 1e-9);
        assertThrows(IllegalArgumentException.class, () -> TransferBench.pairedMedian(List.of(1.0, 2.0), List.of(1.0)));
        assertTrue(Double.isNaN(TransferBench.pairedMedian(List.of(), List.of())));
    }

    @Test
    void aDeltaIsAShareOfTheFullUpdateAtTheSameMemorySpeed() {
        TransferBench.Result result =
                new TransferBench.Result(Map.of(1L << 30, 55.0), Map.of(), List.of(FULL, DELTA), Duration.ZERO);
        // 0.4 / 2.0: the delta's 24 ms against the 120 the full update took at the same memory speed, not the 180 of
        // its median
        assertEquals(0.2, result.ofFullUpdate(DELTA).orElseThrow(), 1e-9);
        assertFalse(result.ofFullUpdate(FULL).isPresent(), "a full row is no share of itself");
        TransferBench.Row otherPath = row("tcp", 0.02, List.of(24.0), List.of(60.0));
        assertFalse(result.ofFullUpdate(otherPath).isPresent(), "no full row of that path to compare with");

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        BenchReport.printTable(result, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String table = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(
                table.contains("1g host, 2.0% of blocks changed: 20.0% of a full update (x memcpy 0.40 against 2.00)"),
                table);

        ObjectNode json = BenchReport.json(result);
        assertEquals(0.2, json.get("results").get(1).get("x_full").asDouble(), 1e-9);
        assertFalse(json.get("results").get(0).has("x_full"));
        assertEquals(5, json.get("results").get(0).get("bound_samples_ms").size());
        assertEquals(2.0, json.get("results").get(0).get("x_bound").asDouble(), 1e-9);
    }
}
