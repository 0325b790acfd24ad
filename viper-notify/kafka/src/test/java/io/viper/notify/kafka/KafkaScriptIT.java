package io.viper.notify.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.manifest.Manifest;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.testing.Ports;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/**
 * deploy/kafka/kafka.sh for real: start a single-node KRaft broker from Maven jars in a temporary state directory,
 * check status and idempotent start, publish and consume through it with the Kafka notifier, stop it, and check that
 * status then says it is not running.
 */
@EnabledOnOs(OS.LINUX)
class KafkaScriptIT {
    static {
        EmbeddedKafkaCluster.quietLogs();
    }

    private record Result(int code, String output) {}

    private static Result run(Path script, Path home, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("bash", script.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("VIPER_KAFKA_HOME", home.toString());
        pb.environment().put("VIPER_KAFKA_HEAP", "256m");
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        assertTrue(p.waitFor(240, TimeUnit.SECONDS), "kafka.sh " + String.join(" ", args) + " finished");
        return new Result(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    @Test
    void startsABrokerThatTheNotifierUsesThenStops() throws Exception {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isRegularFile(dir.resolve("deploy/kafka/kafka.sh"))) {
            dir = dir.getParent();
        }
        assertNotNull(dir, "deploy/kafka/kafka.sh not found");
        Path script = dir.resolve("deploy/kafka/kafka.sh");
        Path home = Files.createTempDirectory("viper-kafka-sh-");
        int port = Ports.freeRun(2);
        try {
            Result start = run(script, home, "start", "--port", Integer.toString(port));
            assertEquals(0, start.code(), start.output());
            assertTrue(start.output().contains("kafka node 1 started (pid "), start.output());
            assertTrue(start.output().contains("notifier URI: kafka://127.0.0.1:" + port), start.output());
            assertTrue(Files.isRegularFile(home.resolve("node-1/kafka.pid")), "pid file written");

            Result again = run(script, home, "start", "--port", Integer.toString(port));
            assertEquals(0, again.code(), again.output());
            assertTrue(again.output().contains("already running"), "start is idempotent: " + again.output());

            Result status = run(script, home, "status");
            assertEquals(0, status.code(), status.output());
            assertTrue(
                    status.output().contains("kafka node 1 running (pid")
                            && status.output().contains("127.0.0.1:" + port),
                    status.output());

            URI uri = URI.create("kafka://127.0.0.1:" + port + "?topic=viper.script");
            ViperConfig config = ViperConfig.of(Map.of("viper.notify.timeout.ms", "30000"));
            try (Notifier producer = new KafkaNotifierProvider().open(uri, NotifierProvider.Role.PRODUCER, config);
                    Notifier consumer = new KafkaNotifierProvider().open(uri, NotifierProvider.Role.CONSUMER, config)) {
                producer.publish(TestManifests.manifest("script", 1, "tcp://127.0.0.1:1"));
                producer.publish(TestManifests.manifest("script", 2, "tcp://127.0.0.1:1"));
                BlockingQueue<Manifest> got = new LinkedBlockingQueue<>();
                try (Notifier.Subscription s = consumer.subscribe("script", got::add)) {
                    Manifest m = got.poll(60, TimeUnit.SECONDS);
                    assertNotNull(m, "the consumer got a manifest through the script's broker");
                    assertEquals(2, m.version());
                }
            }

            Result stop = run(script, home, "stop");
            assertEquals(0, stop.code(), stop.output());
            assertTrue(stop.output().contains("kafka node 1 stopped"), stop.output());
            Result after = run(script, home, "status");
            assertEquals(3, after.code(), after.output());
            assertTrue(after.output().contains("not running"), after.output());
        } finally {
            run(script, home, "stop");
            try (Stream<Path> s = Files.walk(home)) {
                s.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }
}
