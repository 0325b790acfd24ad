package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.testing.Ports;
import io.viper.testing.TestData;
import io.viper.testing.python.PythonRuntime;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * deploy/slurm/viper-kafka.sbatch submitted for real to a one-node Slurm cluster ({@link OneNodeSlurm}; skipped, with
 * the reason, where Slurm is not installed or the test is not root): as written, it sizes itself from the allocation,
 * starts Kafka, a producer with the job's secret and a consumer beside it on the one node, ends once the consumer holds
 * the version, and leaves nothing running; with a custom VIPER_PRODUCER_CMD the command gets the notifier, PFS, model,
 * secret and an agent (a Python trainer publishes through it; the test aborts, saying why, where Debian's python3 lacks
 * numpy and torch), and scancel stops the broker and the agent so that their ports are free again.
 */
class SlurmRecipeIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static OneNodeSlurm slurm;
    private static Path repo;

    @TempDir
    Path tmp;

    @BeforeAll
    static void startCluster(@TempDir Path dir) throws Exception {
        Assumptions.assumeTrue(
                OneNodeSlurm.missing().isEmpty(), () -> OneNodeSlurm.missing().orElse(""));
        repo = TestData.root().getParent();
        slurm = OneNodeSlurm.start(Files.createDirectory(dir.resolve("slurm")));
    }

    @AfterAll
    static void stopCluster() {
        if (slurm != null) {
            slurm.close();
        }
    }

    /** {@code viper} for the job: this test's JVM and class path, as ./viper would run the built CLI. */
    private Path viperBin() throws IOException {
        Path bin = tmp.resolve("viper-bin");
        String java = ProcessHandle.current().info().command().orElse("java");
        Files.writeString(
                bin,
                "#!/usr/bin/env bash\nexec " + java
                        + " --enable-native-access=ALL-UNNAMED -Xmx256m ${VIPER_JAVA_OPTS:-}"
                        + " -cp '" + System.getProperty("java.class.path") + "' " + ViperMain.class.getName()
                        + " \"$@\"\n");
        Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwxr-xr-x"));
        return bin;
    }

    /** An sbatch of the recipe from the repository root, with the ports and directories of this test. */
    private ProcessBuilder sbatch(Path run, int kafkaPort, int metricsPort, String... more) throws IOException {
        List<String> cmd =
                new ArrayList<>(List.of("sbatch", "--parsable", "--output=" + run.resolveSibling("job.out")));
        cmd.addAll(List.of(more));
        cmd.add(repo.resolve("deploy/slurm/viper-kafka.sbatch").toString());
        ProcessBuilder pb = slurm.command(cmd.toArray(String[]::new))
                .directory(repo.toFile())
                .redirectErrorStream(true);
        pb.environment().put("VIPER_BIN", viperBin().toString());
        pb.environment().put("VIPER_RUN_DIR", run.toString());
        pb.environment().put("VIPER_KAFKA_HOME", tmp.resolve("kafka").toString());
        pb.environment().put("VIPER_KAFKA_HEAP", "256m");
        pb.environment().put("VIPER_KAFKA_PORT", Integer.toString(kafkaPort));
        pb.environment().put("VIPER_METRICS_PORT", Integer.toString(metricsPort));
        return pb;
    }

    @Test
    void theRecipeAsWrittenRunsToCompletionAndLeavesNothingRunning() throws Exception {
        Path run = tmp.resolve("run");
        int kafka = Ports.freeRun(2);
        int metrics = Ports.freeRun(3);
        String job = submit(sbatch(run, kafka, metrics));
        String end = slurm.awaitEnd(job, Duration.ofMinutes(6));
        assertEquals(
                "JobState=COMPLETED ExitCode=0:0",
                end,
                () -> "job output:\n" + read(tmp.resolve("job.out")) + "\nproducer:\n"
                        + read(run.resolve("producer.log")) + "\nkafka:\n" + read(run.resolve("kafka.log")));
        Path updates = run.resolve("consumer-" + slurm.node() + ".jsonl");
        String first = Files.readAllLines(updates).getFirst();
        JsonNode u = JSON.readTree(first);
        assertEquals("demo", u.get("model").asText());
        assertTrue(u.get("version").asLong() > 0, first);
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(run.resolve("secret"))));
        JsonNode targets = JSON.readTree(run.resolve("viper-targets.json").toFile());
        assertEquals(
                slurm.node() + ":" + metrics,
                targets.get(0).get("targets").get(0).asText());
        assertNothingLeft(kafka, metrics);
    }

    @Test
    void aCustomProducerGetsTheSettingsAndAnAgentAndScancelStopsEverything() throws Exception {
        Path run = tmp.resolve("run");
        int kafka = Ports.freeRun(2);
        int metrics = Ports.freeRun(3);
        Path env = tmp.resolve("producer.env");
        // The trainer, in Python: records what it was given, publishes through the job's agent, then trains on.
        Path trainer = tmp.resolve("trainer.py");
        Files.writeString(
                trainer,
                String.join(
                        "\n",
                        "import os, sys, time, numpy as np, viper",
                        "with open(sys.argv[1], 'w') as env:",
                        "    for k, v in sorted(os.environ.items()):",
                        "        env.write(f'{k}={v}\\n' if k.startswith('VIPER_') else '')",
                        "with viper.Producer(os.environ['VIPER_MODEL'], policy=viper.every(1)) as producer:",
                        "    producer.step(1, 0.5, {'w': np.arange(16, dtype=np.float32)})",
                        "    producer.flush()",
                        "    with open(sys.argv[1], 'a') as env:",
                        "        env.write('published\\n')",
                        "    time.sleep(600)",
                        ""));
        String python = PythonRuntime.python();
        ProcessBuilder pb = sbatch(run, kafka, metrics);
        pb.environment().put("VIPER_PRODUCER_CMD", python + " " + trainer + " " + env);
        pb.environment()
                .put("VIPER_AGENT_SOCKET", tmp.resolve("agent/agent.sock").toString());
        String job = submit(pb);
        Path updates = run.resolve("consumer-" + slurm.node() + ".jsonl");
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
        while (!(Files.exists(env) && read(env).contains("published") && Files.size(updates) > 0)
                && System.nanoTime() < deadline) {
            assertFalse(
                    slurm.jobs().isEmpty(),
                    () -> "the job ended early:\n" + read(tmp.resolve("job.out")) + "\nkafka:\n"
                            + read(run.resolve("kafka.log")) + "\nagent:\n" + read(run.resolve("agent.log")));
            Thread.sleep(1000);
        }
        String given = read(env);
        for (String v : List.of(
                "VIPER_NOTIFIER=kafka://",
                "VIPER_PFS=",
                "VIPER_MODEL=demo",
                "VIPER_SECRET_FILE=",
                "VIPER_TRANSPORTS=",
                "VIPER_AGENT_SOCKET=" + tmp.resolve("agent/agent.sock"),
                "published")) {
            assertTrue(
                    given.contains(v),
                    () -> v + " in the trainer's environment:\n" + given + "\njob output:\n"
                            + read(tmp.resolve("job.out")) + "\nproducer:\n" + read(run.resolve("producer.log")));
        }
        assertTrue(read(updates).contains("\"model\":\"demo\""), "the consumer received the trainer's version");
        slurm.run(Duration.ofSeconds(30), "scancel", job);
        assertTrue(slurm.awaitEnd(job, Duration.ofMinutes(3)).startsWith("JobState=CANCELLED"));
        assertNothingLeft(kafka, metrics);
        assertFalse(Files.exists(tmp.resolve("agent/agent.sock")), "the agent removed its socket");
    }

    /** Submits {@code sbatch}; returns the job's id. */
    private static String submit(ProcessBuilder sbatch) throws IOException, InterruptedException {
        Process p = sbatch.start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "sbatch returned");
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertEquals(0, p.exitValue(), () -> "sbatch: " + out);
        return out;
    }

    @AfterEach
    void cancelLeftovers() throws Exception {
        if (slurm != null) {
            slurm.cancelAll();
        }
    }

    /** No job left, no process of this test's Kafka or job left, and the broker's and metrics ports free again. */
    private void assertNothingLeft(int kafka, int metrics) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        List<String> jobs;
        List<String> left;
        do {
            jobs = slurm.jobs(); // a cancelled job's steps may still be completing
            left = ProcessHandle.allProcesses()
                    .filter(h -> h.info()
                            .commandLine()
                            .map(c -> c.contains(tmp.toString()) && !c.contains("sbatch"))
                            .orElse(false))
                    .map(h -> h.pid() + " " + h.info().commandLine().orElse(""))
                    .toList();
            if (jobs.isEmpty() && left.isEmpty()) {
                break;
            }
            Thread.sleep(500);
        } while (System.nanoTime() < deadline);
        assertEquals(List.of(), jobs, "no job left");
        assertEquals(List.of(), left, "processes of the job still running");
        // no listener on them: a bind would also fail on a connection of any other process that the kernel gave one
        // of these ports as its own end (they lie in the ephemeral range), which failed this test once
        Set<Integer> listening = listeningPorts();
        for (int port : List.of(kafka, kafka + 1, metrics, metrics + 1, metrics + 2)) {
            assertFalse(listening.contains(port), "port " + port + " still has a listener");
        }
    }

    /** The TCP ports something in this network namespace listens on (IPv4 and IPv6), from /proc/net. */
    private static Set<Integer> listeningPorts() throws IOException {
        Set<Integer> ports = new HashSet<>();
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path file = Path.of(table);
            if (!Files.exists(file)) {
                continue;
            }
            List<String> lines = Files.readAllLines(file);
            for (String line : lines.subList(1, lines.size())) {
                // sl local_address rem_address st ...: the local address as HEX_ADDR:HEX_PORT, state 0A is LISTEN
                String[] cols = line.strip().split("\\s+");
                if (cols.length > 3 && cols[3].equals("0A")) {
                    ports.add(Integer.parseInt(cols[1].substring(cols[1].lastIndexOf(':') + 1), 16));
                }
            }
        }
        assertFalse(ports.isEmpty(), "no listener found in /proc/net at all: cannot tell");
        return ports;
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "(" + p + ": " + e.getMessage() + ")";
        }
    }
}
