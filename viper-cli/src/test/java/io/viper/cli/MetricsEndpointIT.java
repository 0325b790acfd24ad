package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.testing.Ports;
import io.viper.testing.TestData;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The /metrics endpoints of a running {@code viper publish}, {@code viper consume} and {@code viper agent} (issue 38,
 * item 7): HELP text on every series, the consumer's per model gauges, latency/transfer/verify histograms with buckets,
 * failure counters at 0, JVM and process meters, the agent's gauges; and every series deploy/grafana's dashboard
 * queries is in one of these scrapes.
 */
class MetricsEndpointIT {
    private static final Pattern SERIES = Pattern.compile("\\b((?:viper|jvm|process)_[a-z0-9_]+)");
    private final List<Process> started = new ArrayList<>();

    @TempDir
    Path tmp;

    @AfterEach
    void stop() throws InterruptedException {
        for (Process p : started.reversed()) {
            p.destroy();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private Process start(String name, String... args) throws IOException {
        Process p = CliProcesses.viper(tmp, args)
                .redirectError(tmp.resolve(name + ".err").toFile())
                .start();
        started.add(p);
        return p;
    }

    private String firstLine(Process p, String name) throws IOException {
        String line = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
        assertTrue(line != null, () -> name + " printed nothing; stderr: " + read(tmp.resolve(name + ".err")));
        return line;
    }

    @Test
    void endpointsServeWhatTheDashboardQueries() throws Exception {
        Path model = TestData.root().resolve("safetensors/all_dtypes.safetensors");
        String notifier = "embedded://127.0.0.1:" + Ports.free();
        int[] ports = {Ports.free(), Ports.free(), Ports.free()};
        Process publisher = start(
                "publish",
                "publish",
                "--model=m",
                "--file=" + model,
                "--notifier=" + notifier,
                "--linger=120s",
                "--metrics-port=" + ports[0]);
        long version = new ObjectMapper()
                .readTree(firstLine(publisher, "publish"))
                .get("version")
                .asLong();
        Process consumer =
                start("consume", "consume", "--model=m", "--notifier=" + notifier, "--metrics-port=" + ports[1]);
        JsonNode update = new ObjectMapper().readTree(firstLine(consumer, "consume"));
        assertEquals(version, update.get("version").asLong());
        Process agent = start(
                "agent",
                "agent",
                "--socket=" + tmp.resolve("agent.sock"),
                "--shm-dir=" + Files.createDirectory(tmp.resolve("shm")),
                "--notifier=" + notifier,
                "--metrics-port=" + ports[2]);
        assertTrue(firstLine(agent, "agent").startsWith("viper agent listening"));

        String prod = scrape(ports[0]);
        String cons = scrape(ports[1]);
        String agnt = scrape(ports[2]);
        for (String s : List.of(prod, cons, agnt)) {
            for (String line : s.lines().filter(l -> l.startsWith("# HELP ")).toList()) {
                assertTrue(line.split(" ", 4).length == 4, "HELP text: " + line);
            }
        }
        assertEquals((double) version, value(cons, "viper_consumer_version{model=\"m\"}"), "the version served");
        assertEquals(0, value(cons, "viper_consumer_versions_behind{model=\"m\"}"));
        assertTrue(value(cons, "viper_consumer_swap_age_seconds{model=\"m\"}") >= 0);
        assertEquals(0, value(cons, "viper_consumer_failures_total{model=\"m\"}"), "present at 0");
        assertEquals(0, value(cons, "viper_consumer_load_failures_total{model=\"m\"}"), "present at 0");
        for (String h : List.of("viper_update_latency", "viper_update_transfer", "viper_update_verify")) {
            assertTrue(cons.contains(h + "_seconds_bucket{"), h + " has buckets");
        }
        assertTrue(prod.contains("viper_producer_stall_seconds_bucket{"), "the stall has buckets");
        assertEquals(1, value(prod, "viper_producer_published_total{model=\"m\"}"));
        for (String s : List.of(prod, cons, agnt)) {
            for (String jvm : List.of("jvm_memory_used_bytes", "process_cpu_usage", "process_uptime_seconds")) {
                assertTrue(s.contains("\n" + jvm), jvm);
            }
        }
        assertEquals(0, value(agnt, "viper_agent_clients"));

        Set<String> served = new TreeSet<>();
        for (String s : List.of(prod, cons, agnt)) {
            s.lines().filter(l -> !l.startsWith("#")).forEach(l -> served.add(l.split("[{ ]", 2)[0]));
        }
        Path dashboard = TestData.root().resolveSibling("deploy/grafana/viper-dashboard.json");
        Set<String> queried = new TreeSet<>();
        new ObjectMapper().readTree(dashboard.toFile()).findValues("expr").forEach(e -> addSeries(e.asText(), queried));
        addSeries(Files.readString(dashboard).replaceAll("(?s).*label_values\\(([a-z_]+).*", "$1"), queried);
        assertFalse(queried.isEmpty());
        Set<String> missing = new TreeSet<>(queried);
        missing.removeAll(served);
        assertTrue(missing.isEmpty(), "series the dashboard queries that no endpoint serves: " + missing);
    }

    private static void addSeries(String expr, Set<String> into) {
        Matcher m = SERIES.matcher(expr);
        while (m.find()) {
            into.add(m.group(1));
        }
    }

    private static double value(String scrape, String series) {
        return scrape.lines()
                .filter(l -> l.startsWith(series + " "))
                .mapToDouble(
                        l -> Double.parseDouble(l.substring(series.length() + 1).trim()))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no " + series + " in the scrape"));
    }

    private static String scrape(int port) throws IOException, InterruptedException {
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                            .timeout(Duration.ofSeconds(10))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode());
            return r.body();
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "";
        }
    }
}
