package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.cli.bench.TransferBench;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code viper bench transfer --sizes} between two real processes: one row per size and path in the JSON, with every
 * sample and its breakdown, and the latency-against-size chart. Checks the shape of what comes out, not how fast it
 * was.
 */
class BenchTransferIT {
    @TempDir
    Path tmp;

    @Test
    void aSweepGivesOneRowPerSizeAndPathWithEverySampleAndAPlot() throws Exception {
        Path plot = tmp.resolve("sweep.png");
        Path javaTmp = Files.createDirectory(tmp.resolve("java-tmp"));
        ProcessBuilder bench = CliProcesses.viper(
                        tmp,
                        "bench",
                        "transfer",
                        "--sizes",
                        "4k,64k,1m",
                        "--paths",
                        "tcp,pfs",
                        "--repeat",
                        "3",
                        "--warmup",
                        "0s",
                        "--interval",
                        "20ms",
                        "--poll-interval",
                        "50ms",
                        "--json",
                        "--plot",
                        plot.toString())
                .redirectError(tmp.resolve("bench.err").toFile());
        bench.environment().put("JAVA_TOOL_OPTIONS", "-Djava.io.tmpdir=" + javaTmp);
        Process p = bench.start();
        assertTrue(p.waitFor(240, TimeUnit.SECONDS), "the bench finished");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertEquals(0, p.exitValue(), () -> "stdout: " + out + "; stderr: " + read(tmp.resolve("bench.err")));
        JsonNode json = new ObjectMapper().readTree(out);
        assertEquals(List.of(4096L, 65536L, 1048576L), longs(json.get("sizes")));
        assertEquals(20, json.get("interval_ms").asLong(), "the pause before each measured update");
        List<String> rows = new ArrayList<>();
        for (JsonNode r : json.get("results")) {
            rows.add(r.get("path").asText() + "/" + r.get("size_bytes").asLong());
            assertEquals(3, r.get("samples_ms").size(), "every measured sample");
            assertEquals(3, r.get("stall_samples_ms").size());
            assertTrue(r.get("warmup_updates").asInt() >= TransferBench.MIN_WARMUP, "warmed up before measuring");
            assertTrue(r.get("median_ms").asDouble() <= r.get("p99_ms").asDouble());
            assertTrue(r.get("bound_ms").asDouble() > 0, "memcpy measured in the same run");
            assertEquals(3, r.get("bound_samples_ms").size(), "a bound with every measured update");
            if (!r.get("path").asText().equals("pfs-poll")) {
                assertEquals(3, r.get("transfer_samples_ms").size());
                assertTrue(
                        r.get("transfer_samples_ms").get(0).isNumber(), "the consumer's breakdown came over the pipe");
            }
        }
        assertEquals(
                List.of(
                        "tcp/4096",
                        "tcp/65536",
                        "tcp/1048576",
                        "pfs/4096",
                        "pfs/65536",
                        "pfs/1048576",
                        "pfs-poll/4096",
                        "pfs-poll/65536",
                        "pfs-poll/1048576"),
                rows);
        byte[] png = Files.readAllBytes(plot);
        assertTrue(png.length > 1000 && png[1] == 'P' && png[2] == 'N' && png[3] == 'G', "a PNG was written");
        try (var left = Files.list(javaTmp)) {
            assertEquals(
                    List.of(),
                    left.map(f -> f.getFileName().toString())
                            .filter(n -> n.startsWith("viper-bench"))
                            .toList(),
                    "the bench removed the temporary repository it made");
        }
    }

    /**
     * --producer-config reaches the producer (with the compare off it copies every byte of a delta) and
     * --consumer-config the consumer's process (with inline bytes refused there, it fetches a version that came inline
     * over tcp, and the bench says the path was not the one measured).
     */
    @Test
    void configurationReachesTheProducerAndTheConsumerProcess() throws Exception {
        ProcessBuilder bench = CliProcesses.viper(
                        tmp,
                        "bench",
                        "transfer",
                        "--sizes",
                        "4m",
                        "--paths",
                        "tcp",
                        "--changed",
                        "25%",
                        "--repeat",
                        "3",
                        "--warmup",
                        "0s",
                        "--no-baseline",
                        "--json",
                        "--producer-config",
                        "viper.producer.staging.compare=false")
                .redirectError(tmp.resolve("bench.err").toFile());
        Process p = bench.start();
        assertTrue(p.waitFor(240, TimeUnit.SECONDS), "the bench finished");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertEquals(0, p.exitValue(), () -> "stdout: " + out + "; stderr: " + read(tmp.resolve("bench.err")));
        List<String> rows = new ArrayList<>();
        for (JsonNode r : new ObjectMapper().readTree(out).get("results")) {
            rows.add(r.get("changed").asDouble() + ": copied "
                    + r.get("copied_bytes").asLong() + ", moved "
                    + r.get("moved_bytes").asLong());
        }
        // Every byte copied by the producer, even where a quarter of the blocks changed; the consumer still moves only
        // those.
        assertEquals(List.of("1.0: copied 4194304, moved 4194304", "0.25: copied 4194304, moved 1048576"), rows);

        ProcessBuilder refusing = CliProcesses.viper(
                        tmp,
                        "bench",
                        "transfer",
                        "--sizes",
                        "4k",
                        "--paths",
                        "inline",
                        "--repeat",
                        "1",
                        "--warmup",
                        "0s",
                        "--consumer-config",
                        "viper.consumer.inline=false")
                .redirectError(tmp.resolve("refusing.err").toFile());
        Process q = refusing.start();
        assertTrue(q.waitFor(240, TimeUnit.SECONDS), "the bench finished");
        String err = read(tmp.resolve("refusing.err"));
        assertTrue(
                q.exitValue() != 0 && err.contains("consumer used another path than inline") && err.contains(" tcp "),
                err);
    }

    private static List<Long> longs(JsonNode a) {
        List<Long> out = new ArrayList<>();
        a.forEach(n -> out.add(n.asLong()));
        return out;
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (Exception e) {
            return "(" + e + ")";
        }
    }
}
