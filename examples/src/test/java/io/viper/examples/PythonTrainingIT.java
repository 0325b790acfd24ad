package io.viper.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.format.SafetensorsFile;
import io.viper.tensor.Tensor;
import io.viper.testing.python.PythonRuntime;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where training really happens: {@code examples/python/train_publish.py} trains a PyTorch network and publishes
 * through a {@code viper agent} process; a Java consumer ({@code viper consume}), the {@link ConsumerExample} of
 * docs/java.md and a Python consumer ({@code examples/python/consume.py}, through a second agent) follow it, each in
 * its own process. Every version reaches the Java and the Python consumer with the bytes the trainer's state_dict held
 * (SHA-256 per tensor); the trainer waits for both after each version, so that none is skipped. ConsumerExample answers
 * requests with the torch-trained weights.
 */
class PythonTrainingIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int VERSIONS = 10;

    @TempDir
    Path dir;

    private TestProcesses processes;

    @BeforeEach
    void setUp() {
        processes = new TestProcesses(dir);
    }

    @AfterEach
    void stop() throws Exception {
        processes.close();
    }

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS)
    void everyVersionATorchLoopPublishesReachesAJavaAndAPythonConsumerByteIdentical() throws Exception {
        String python = PythonRuntime.python();
        String notifier = processes.brokerAndTwoAgents();
        Path out = dir.resolve("java");
        TestProcesses.Running java = processes.consume("digits", notifier, out);
        // ConsumerExample serves until the model of the last iteration the trainer publishes.
        TestProcesses.Running example = processes.start(
                "example",
                new ProcessBuilder(TestProcesses.javaCommand(
                                ConsumerExample.class.getName(), notifier, Integer.toString(50 * VERSIONS)))
                        .directory(dir.toFile()));
        TestProcesses.Running py = processes.start(
                "consume-py",
                processes.python(
                        python,
                        "consume.py",
                        "--agent",
                        dir.resolve("consumer-agent.sock").toString(),
                        "--until",
                        Integer.toString(VERSIONS)));
        processes.await(py, "{\"following\"");
        TestProcesses.Running trainer = processes.start(
                "train",
                processes.python(
                        python,
                        "train_publish.py",
                        "--agent",
                        dir.resolve("producer-agent.sock").toString(),
                        "--iterations",
                        Integer.toString(50 * VERSIONS),
                        "--every",
                        "50",
                        "--lockstep"));

        Map<Long, JsonNode> published = new LinkedHashMap<>();
        try (OutputStream go = trainer.process().getOutputStream()) {
            for (long v = 1; v <= VERSIONS; v++) {
                JsonNode p = JSON.readTree(processes.await(trainer, "{\"version\": " + v + ","));
                published.put(v, p.get("sha256"));
                assertEquals(
                        v,
                        JSON.readTree(processes.await(java, "{\"model\":\"digits\",\"version\":" + v + ","))
                                .get("version")
                                .asLong());
                JsonNode got = JSON.readTree(processes.await(py, "{\"version\": " + v + ","));
                assertEquals(p.get("sha256"), got.get("sha256"), "the Python consumer's v" + v);
                go.write('\n'); // both have it: the trainer may go on
                go.flush();
            }
        }
        JsonNode done = JSON.readTree(processes.await(trainer, "{\"done\""));
        assertEquals(VERSIONS, done.get("done").asLong());
        assertTrue(done.get("accuracy").asDouble() > 0.8, "the torch loop trained: " + done);

        for (Map.Entry<Long, JsonNode> e : published.entrySet()) {
            try (SafetensorsFile f = SafetensorsFile.open(out.resolve("digits-v" + e.getKey() + ".safetensors"))) {
                Map<String, String> sums = new LinkedHashMap<>();
                for (Tensor t : f.tensors()) {
                    sums.put(t.name(), TestProcesses.sha256(t));
                }
                assertEquals(JSON.convertValue(e.getValue(), Map.class), sums, "the Java consumer's v" + e.getKey());
            }
        }
        String answered = processes.await(example, "consumer: answered");
        assertTrue(answered.matches("consumer: answered [1-9][0-9]* requests, now serving v" + VERSIONS), answered);
    }
}
