package io.viper.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.viper.cli.bench.FleetSettings.Topology;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The fleet's figures: the last swap, against one consumer and the links' bounds, and what the JSON carries. */
class FleetReportTest {
    private static final long SIZE = 128L << 20;
    private static final LinkRate RATE = LinkRate.parse("--link-rate", "500mbit");

    private static FleetBench.Swap swap(int node, double ms, boolean identical) {
        return new FleetBench.Swap(node, 1, ms, "tcp", SIZE, 0, identical, SIZE, 0);
    }

    private static final FleetBench.Round ONE = new FleetBench.Round(
            Topology.STAR, 1, 1, SIZE, List.of(swap(1, 3000, true)), OptionalLong.of(SIZE + 100), 0);
    private static final FleetBench.Round FOUR = new FleetBench.Round(
            Topology.STAR,
            4,
            1,
            SIZE,
            List.of(swap(1, 9900, true), swap(2, 10100, true), swap(3, 10000, false), swap(4, 9950, true)),
            OptionalLong.of(4 * SIZE),
            0);

    @Test
    void theLastSwapIsTheSlowestConsumerAgainstTheFleetOfOne() {
        FleetBench.Result r = new FleetBench.Result(SIZE, RATE, true, "namespaces", List.of(ONE, FOUR));
        assertEquals(10100, FOUR.lastSwapMs());
        assertEquals(3000, r.oneConsumerMs(FOUR).getAsDouble());
        assertFalse(FOUR.allIdentical(), "consumer 3 swapped other bytes");
        // 128 MiB at 62.5 MB/s: the 2.15 s; a star of four sends four copies through node 0's link
        assertEquals(2147.5, FleetReport.boundMs(r, FOUR), 0.1);
        assertEquals(4 * 2147.5, FleetReport.starBoundMs(r, FOUR), 0.4);
        JsonNode four = FleetReport.json(r).get("rounds").get(1);
        assertEquals(3.367, four.get("x_one_consumer").asDouble(), 0.001);
        assertEquals(4 * SIZE, four.get("producer_tx_bytes").asLong());
        assertFalse(four.get("identical").asBoolean());
        assertEquals(4, four.get("swaps").size());
        assertEquals("star", four.get("topology").asText());
    }

    @Test
    void aRelayedFleetSaysWhereEachConsumersBytesCameFromAndWhichNodeWasKilled() {
        FleetBench.Round relayed = new FleetBench.Round(
                Topology.RELAY,
                3,
                1,
                SIZE,
                List.of(
                        new FleetBench.Swap(1, 1, 3100, "tcp", SIZE, 0, true, SIZE, 0),
                        new FleetBench.Swap(3, 1, 3300, "tcp", SIZE, 0, true, SIZE / 4, 3 * SIZE / 4)),
                OptionalLong.of(SIZE + SIZE / 4),
                2);
        FleetBench.Result r = new FleetBench.Result(SIZE, RATE, true, "namespaces", List.of(relayed));
        JsonNode j = FleetReport.json(r).get("rounds").get(0);
        assertEquals("relay", j.get("topology").asText());
        assertEquals(2, j.get("killed_node").asInt());
        assertEquals(
                3 * SIZE / 4, j.get("swaps").get(1).get("bytes_from_relays").asLong());
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        FleetReport.printTable(r, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String table = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(table.contains("2/2 (node 2 killed)"), table);
        assertTrue(table.contains("relays MiB"), table);
    }

    @Test
    void onLoopbackTheTableSaysTheLinksAreNotCappedAndCountsNoBytes() {
        FleetBench.Round loop =
                new FleetBench.Round(Topology.STAR, 1, 1, SIZE, List.of(swap(1, 400, true)), OptionalLong.empty(), 0);
        FleetBench.Result r =
                new FleetBench.Result(SIZE, RATE, false, "processes on loopback, links NOT capped", List.of(loop));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        FleetReport.printTable(r, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String table = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(table.contains("links NOT capped: the processes talk over loopback"), table);
        assertTrue(FleetReport.json(r)
                .get("rounds")
                .get(0)
                .get("producer_tx_bytes")
                .isNull());
        assertFalse(FleetReport.json(r).get("capped").asBoolean());
    }
}
