package io.viper.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.format.SafetensorsFile;
import io.viper.tensor.Tensor;
import io.viper.testing.python.PythonRuntime;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
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

    private final List<Process> processes = new ArrayList<>();
    private final List<Path> shmDirs = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (Process p : processes.reversed()) {
            p.destroy(); // SIGTERM: an agent removes its socket and files on the way out
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        }
        for (Path shm : shmDirs) {
            try (Stream<Path> left = Files.list(shm)) {
                assertEquals(List.of(), left.toList(), "an agent left files in " + shm);
            }
            Files.delete(shm);
        }
    }

    /** A process of the test, its stdout lines queued as they come (stderr goes to {@code <name>.err}). */
    private record Running(String name, Process process, BlockingQueue<String> lines) {}

    private Running start(String name, ProcessBuilder pb) throws IOException {
        Process p = pb.redirectError(dir.resolve(name + ".err").toFile()).start();
        processes.add(p);
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread.ofVirtual().start(() -> {
            try (BufferedReader r =
                    new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String l = r.readLine(); l != null; l = r.readLine()) {
                    lines.add(l);
                }
            } catch (IOException ignored) {
                // the process ended
            }
            lines.add("<exit>");
        });
        return new Running(name, p, lines);
    }

    /** The next line of {@code r} starting with {@code prefix}, within 120 s. */
    private String await(Running r, String prefix) throws Exception {
        while (true) {
            String l = r.lines().poll(120, TimeUnit.SECONDS);
            if (l == null || l.equals("<exit>")) {
                throw new AssertionError(r.name() + " printed no line starting with " + prefix + " ("
                        + (l == null ? "timeout" : "exited") + "); stderr:\n"
                        + Files.readString(dir.resolve(r.name() + ".err")));
            }
            if (l.startsWith(prefix)) {
                return l;
            }
        }
    }

    private Running agent(String name, String notifier) throws Exception {
        Path shm = Files.createTempDirectory(Path.of("/dev/shm"), "viper-it-");
        shmDirs.add(shm);
        Running agent = start(
                name,
                viper(
                        "agent",
                        "--socket",
                        dir.resolve(name + ".sock").toString(),
                        "--notifier",
                        notifier,
                        "--shm-dir",
                        shm.toString()));
        await(agent, "viper agent listening on");
        return agent;
    }

    private ProcessBuilder python(String python, String script, String... args) {
        List<String> cmd = new ArrayList<>(List.of(
                python,
                PythonRuntime.repository().resolve("examples/python/" + script).toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile());
        pb.environment()
                .put(
                        "PYTHONPATH",
                        PythonRuntime.repository().resolve("clients/python").toString());
        pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
        return pb;
    }

    @Test
    @Timeout(value = 600, unit = TimeUnit.SECONDS)
    void everyVersionATorchLoopPublishesReachesAJavaAndAPythonConsumerByteIdentical() throws Exception {
        String python = PythonRuntime.python();
        int port = freePort();
        String notifier = "embedded://127.0.0.1:" + port;
        // A broker of its own, which vouches for the versions of a new model: they start at 1.
        await(start("broker", viper("broker", "--port", Integer.toString(port))), "viper broker listening on");
        agent("producer-agent", notifier);
        agent("consumer-agent", notifier);
        Path out = dir.resolve("java");
        Running java = start(
                "consume", viper("consume", "--model", "digits", "--notifier", notifier, "--out", out.toString()));
        // ConsumerExample serves until the model of the last iteration the trainer publishes.
        Running example = start(
                "example",
                new ProcessBuilder(
                                javaCommand(ConsumerExample.class.getName(), notifier, Integer.toString(50 * VERSIONS)))
                        .directory(dir.toFile()));
        Running py = start(
                "consume-py",
                python(
                        python,
                        "consume.py",
                        "--agent",
                        dir.resolve("consumer-agent.sock").toString(),
                        "--until",
                        Integer.toString(VERSIONS)));
        await(py, "{\"following\"");
        Running trainer = start(
                "train",
                python(
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
                JsonNode p = JSON.readTree(await(trainer, "{\"version\": " + v + ","));
                published.put(v, p.get("sha256"));
                assertEquals(
                        v,
                        JSON.readTree(await(java, "{\"model\":\"digits\",\"version\":" + v + ","))
                                .get("version")
                                .asLong());
                JsonNode got = JSON.readTree(await(py, "{\"version\": " + v + ","));
                assertEquals(p.get("sha256"), got.get("sha256"), "the Python consumer's v" + v);
                go.write('\n'); // both have it: the trainer may go on
                go.flush();
            }
        }
        JsonNode done = JSON.readTree(await(trainer, "{\"done\""));
        assertEquals(VERSIONS, done.get("done").asLong());
        assertTrue(done.get("accuracy").asDouble() > 0.8, "the torch loop trained: " + done);

        for (Map.Entry<Long, JsonNode> e : published.entrySet()) {
            try (SafetensorsFile f = SafetensorsFile.open(out.resolve("digits-v" + e.getKey() + ".safetensors"))) {
                Map<String, String> sums = new LinkedHashMap<>();
                for (Tensor t : f.tensors()) {
                    sums.put(t.name(), sha256(t));
                }
                assertEquals(JSON.convertValue(e.getValue(), Map.class), sums, "the Java consumer's v" + e.getKey());
            }
        }
        String answered = await(example, "consumer: answered");
        assertTrue(answered.matches("consumer: answered [1-9][0-9]* requests, now serving v" + VERSIONS), answered);
    }

    /** A {@code viper} command in a JVM of its own, with this test's class path (viper-cli is a test dependency). */
    private ProcessBuilder viper(String... args) {
        return new ProcessBuilder(javaCommand("io.viper.cli.ViperMain", args)).directory(dir.toFile());
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static List<String> javaCommand(String mainClass, String... args) {
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current()
                        .info()
                        .command()
                        .orElse(Path.of(System.getProperty("java.home"), "bin", "java")
                                .toString()),
                "--enable-native-access=ALL-UNNAMED",
                "-Xmx256m",
                "-cp",
                System.getProperty("java.class.path"),
                mainClass));
        cmd.addAll(List.of(args));
        return cmd;
    }

    private static String sha256(Tensor t) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        md.update(t.data().asByteBuffer());
        return HexFormat.of().formatHex(md.digest());
    }
}
