package io.viper.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.format.SafetensorsFile;
import io.viper.tensor.Checkpoint;
import io.viper.testing.python.PythonRuntime;
import java.io.OutputStream;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an ML engineer meets first ({@code examples/python/tied_lm.py}): a transformer of about 21 M parameters written
 * with {@code torch.nn}, its input and output embeddings tied, trained with AdamW and published every 2 steps through a
 * {@code viper agent}, with a NaN loss in the middle; a Python process serves it through a second agent (a forward pass
 * on the leased memory) and {@code viper consume} follows it. Every version, the one with the NaN loss and those after
 * it included, reaches both with the bytes of the trainer's state_dict under every name, the tied embedding stored once
 * (the output head's name an alias in the metadata).
 */
class TiedTransformerIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int VERSIONS = 4;
    private static final long EMBEDDING_BYTES = 32000L * 512 * Float.BYTES;

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
    void everyVersionOfATiedTransformerArrivesByteIdenticalWithTheEmbeddingStoredOnce() throws Exception {
        String python = PythonRuntime.python();
        String notifier = processes.brokerAndTwoAgents();
        Path out = dir.resolve("java");
        TestProcesses.Running java = processes.consume("tied-lm", notifier, out);
        String serving = dir.resolve("consumer-agent.sock").toString();
        TestProcesses.Running py = processes.start(
                "serve", processes.python(python, "tied_lm.py", "serve", "--agent", serving, "--until", "4"));
        processes.await(py, "{\"following\"");
        String training = dir.resolve("producer-agent.sock").toString();
        TestProcesses.Running trainer = processes.start(
                "train", processes.python(python, "tied_lm.py", "train", "--agent", training, "--lockstep"));
        JsonNode size = JSON.readTree(processes.await(trainer, "{\"parameters\""));
        assertTrue(size.get("parameters").asLong() >= 20_000_000, "a model of at least 20 M parameters: " + size);

        Map<Long, JsonNode> published = new LinkedHashMap<>();
        try (OutputStream go = trainer.process().getOutputStream()) {
            for (long v = 1; v <= VERSIONS; v++) {
                JsonNode p = JSON.readTree(processes.await(trainer, "{\"version\": " + v + ","));
                published.put(v, p);
                assertEquals(v == 2, p.get("loss").asText().equals("nan"), "the loss of step 4 only is NaN: " + p);
                assertTrue(
                        p.get("written_bytes").asLong() < 2 * EMBEDDING_BYTES,
                        "the tied embedding is written to the agent once: " + p.get("written_bytes"));
                JsonNode line = JSON.readTree(processes.await(java, "{\"model\":\"tied-lm\",\"version\":" + v + ","));
                assertEquals(v, line.get("version").asLong());
                JsonNode served = JSON.readTree(processes.await(py, "{\"version\": " + v + ","));
                assertEquals(p.get("sha256"), served.get("sha256"), "the Python consumer's v" + v);
                assertEquals(v == 2, served.get("loss").asText().equals("NaN"), "served with its loss: " + served);
                assertEquals(Map.of("head.weight", "tok.weight"), JSON.convertValue(served.get("aliases"), Map.class));
                assertTrue(served.get("finite").asBoolean(), "the served model infers: " + served);
                go.write('\n'); // both have it: the trainer may go on
                go.flush();
            }
        }
        assertEquals(
                VERSIONS,
                JSON.readTree(processes.await(trainer, "{\"done\"")).get("done").asLong());

        for (Map.Entry<Long, JsonNode> e : published.entrySet()) {
            try (SafetensorsFile f = SafetensorsFile.open(out.resolve("tied-lm-v" + e.getKey() + ".safetensors"))) {
                assertNull(f.tensor("head.weight"), "v" + e.getKey() + " stores the tied embedding once");
                assertEquals("tok.weight", f.metadata().get("head.weight"));
                Checkpoint c = f.checkpoint("tied-lm", e.getKey());
                Map<String, String> sums = new LinkedHashMap<>();
                for (Iterator<String> names = e.getValue().get("sha256").fieldNames(); names.hasNext(); ) {
                    String name = names.next();
                    sums.put(name, TestProcesses.sha256(c.tensor(name)));
                }
                assertEquals(
                        JSON.convertValue(e.getValue().get("sha256"), Map.class),
                        sums,
                        "the Java consumer's v" + e.getKey());
            }
        }
    }
}
