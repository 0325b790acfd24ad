package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code viper bench fleet} with a small fleet: two consumers, each a process of its own, swap in a version
 * byte-identical to the published one, then a delta of which they move only the changed blocks. With root and {@code ip
 * netns} (CI) in network namespaces with capped links, which are gone afterwards; elsewhere on loopback, the output
 * saying the links are not capped. Checks what came out, not how fast.
 */
class BenchFleetIT {
    @TempDir
    Path tmp;

    @Test
    void everyConsumerSwapsTheSameBytesAndNothingIsLeftBehind() throws Exception {
        Path plot = tmp.resolve("fleet.svg");
        Process p = CliProcesses.viper(
                        tmp,
                        "bench",
                        "fleet",
                        "--consumers",
                        "2",
                        "--size",
                        "8m",
                        "--link-rate",
                        "200mbit",
                        "--changed",
                        "25%",
                        "--relay",
                        "off",
                        "--json",
                        "--plot",
                        plot.toString())
                .redirectError(tmp.resolve("bench.err").toFile())
                .start();
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the bench finished");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        String err = Files.readString(tmp.resolve("bench.err"));
        assertEquals(0, p.exitValue(), () -> "stdout: " + out + "; stderr: " + err);
        JsonNode json = new ObjectMapper().readTree(out);
        boolean capped = json.get("capped").asBoolean();
        String network = json.get("network").asText();
        assertTrue(
                capped
                        ? network.contains("network namespaces") && network.contains("200mbit")
                        : network.contains("NOT capped"),
                network);
        assertEquals(8L << 20, json.get("size_bytes").asLong());
        assertEquals(2, json.get("rounds").size(), "the first version, then the delta");
        JsonNode full = json.get("rounds").get(0);
        JsonNode delta = json.get("rounds").get(1);
        assertEquals("star", full.get("topology").asText());
        assertEquals(1.0, full.get("changed").asDouble());
        assertEquals(0.25, delta.get("changed").asDouble());
        for (JsonNode round : json.get("rounds")) {
            assertEquals(2, round.get("consumers").asInt());
            assertTrue(round.get("identical").asBoolean(), round.toString());
            assertEquals(2, round.get("swaps").size());
            double last = 0;
            for (JsonNode s : round.get("swaps")) {
                assertTrue(
                        s.get("identical").asBoolean(),
                        "consumer " + s.get("node") + "'s tensors are the published ones");
                assertEquals("tcp", s.get("path").asText());
                assertEquals(round == full ? 2 : 3, s.get("version").asLong(), "v1 is the warm-up");
                assertTrue(s.get("latency_ms").asDouble() > 0);
                last = Math.max(last, s.get("latency_ms").asDouble());
            }
            assertEquals(last, round.get("last_swap_ms").asDouble(), 0.001);
            assertEquals(
                    capped,
                    round.get("producer_tx_bytes").isNumber(),
                    "node 0's bytes are counted where it has a link of its own");
        }
        for (JsonNode s : full.get("swaps")) {
            assertEquals(8L << 20, s.get("bytes").asLong(), "the first version moves the whole model");
        }
        long newBytes = delta.get("new_bytes").asLong();
        assertTrue(newBytes > 0 && newBytes < (4L << 20), "about a quarter of the 1 MiB blocks changed: " + newBytes);
        for (JsonNode s : delta.get("swaps")) {
            assertEquals(newBytes, s.get("bytes").asLong(), "a delta moves the changed blocks only");
            assertEquals((8L << 20) - newBytes, s.get("reused_bytes").asLong());
        }
        if (capped) {
            // a star: node 0 sends every consumer's copy (and a little of the broker's and TCP's own)
            long sent = full.get("producer_tx_bytes").asLong();
            assertTrue(sent >= 2 * (8L << 20) && sent < 2.2 * (8L << 20), "node 0 sent " + sent);
            assertFalse(netnsList().contains("vpf-"), "the namespaces are gone: " + netnsList());
        }
        assertTrue(Files.readString(plot).contains("<svg"), "an SVG was written");
    }

    /**
     * Three consumers relaying, the middle one SIGKILLed mid-transfer: the other two swap in the version byte for byte,
     * the producer sends about one model (not three), some consumer reads from a relay, and the delta moves only the
     * changed blocks.
     */
    @Test
    void relayedFleetSurvivesAKilledRelayAndTheProducerSendsOneModel() throws Exception {
        Process p = CliProcesses.viper(
                        tmp,
                        "bench",
                        "fleet",
                        "--consumers",
                        "3",
                        "--size",
                        "8m",
                        "--link-rate",
                        "200mbit",
                        "--changed",
                        "25%",
                        "--relay",
                        "on",
                        "--kill-relay",
                        "--json")
                .redirectError(tmp.resolve("bench.err").toFile())
                .start();
        assertTrue(p.waitFor(300, TimeUnit.SECONDS), "the bench finished");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        String err = Files.readString(tmp.resolve("bench.err"));
        assertEquals(0, p.exitValue(), () -> "stdout: " + out + "; stderr: " + err);
        JsonNode json = new ObjectMapper().readTree(out);
        boolean capped = json.get("capped").asBoolean();
        JsonNode full = json.get("rounds").get(0);
        JsonNode delta = json.get("rounds").get(1);
        long relayed = 0;
        for (JsonNode round : json.get("rounds")) {
            assertEquals("relay", round.get("topology").asText());
            assertEquals(1, round.get("killed_node").asInt(), "node 3 / 2 = 1 was killed");
            assertTrue(round.get("identical").asBoolean(), round.toString());
            assertEquals(2, round.get("swaps").size(), "the two consumers left swapped");
            for (JsonNode s : round.get("swaps")) {
                assertEquals(
                        s.get("bytes").asLong(),
                        s.get("bytes_from_producer").asLong()
                                + s.get("bytes_from_relays").asLong(),
                        s.toString());
                relayed += s.get("bytes_from_relays").asLong();
            }
        }
        assertTrue(relayed > 0, "some consumer read from a relay: " + out);
        long newBytes = delta.get("new_bytes").asLong();
        for (JsonNode s : delta.get("swaps")) {
            assertEquals(newBytes, s.get("bytes").asLong(), "a delta moves the changed blocks only");
        }
        if (capped) {
            long sent = full.get("producer_tx_bytes").asLong();
            assertTrue(sent < 2 * (8L << 20), "node 0 sent less than two models for three consumers: " + sent);
            assertFalse(netnsList().contains("vpf-"), "the namespaces are gone: " + netnsList());
        }
    }

    private static String netnsList() throws Exception {
        Process p = new ProcessBuilder("ip", "netns", "list")
                .redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor(30, TimeUnit.SECONDS);
        return out;
    }
}
