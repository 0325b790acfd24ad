package io.viper.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.viper.tensor.Tensor;
import io.viper.testing.Ports;
import io.viper.testing.python.PythonRuntime;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The processes of a test that trains in Python: {@code viper} commands and agents in JVMs of their own (with the
 * test's class path; viper-cli is a test dependency), Python scripts of {@code examples/python}, each with its stdout
 * lines queued as they come and its stderr in {@code <name>.err} under the test's folder. {@link #close()} stops them
 * (SIGTERM first, so that agents remove their files) and checks that no agent left a file in its shared-memory folder.
 */
final class TestProcesses implements AutoCloseable {
    private final Path dir;
    private final List<Process> processes = new ArrayList<>();
    private final List<Path> shmDirs = new ArrayList<>();

    TestProcesses(Path dir) {
        this.dir = dir;
    }

    /** A process of the test, its stdout lines queued as they come. */
    record Running(String name, Process process, BlockingQueue<String> lines) {}

    Running start(String name, ProcessBuilder pb) throws IOException {
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
    String await(Running r, String prefix) throws Exception {
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

    /** A {@code viper agent} on {@code <name>.sock} with a shared-memory folder of its own, once it listens. */
    Running agent(String name, String notifier) throws Exception {
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

    /**
     * A broker of its own (which vouches for the versions of a new model: they start at 1) and two agents on it,
     * {@code producer-agent.sock} and {@code consumer-agent.sock}; returns the notifier.
     */
    String brokerAndTwoAgents() throws Exception {
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        await(start("broker", viper("broker", "--port", Integer.toString(port))), "viper broker listening on");
        agent("producer-agent", notifier);
        agent("consumer-agent", notifier);
        return notifier;
    }

    /** {@code viper consume} of {@code model}, every version kept in {@code out}. */
    Running consume(String model, String notifier, Path out) throws IOException {
        return start(
                "consume",
                viper("consume", "--model", model, "--notifier", notifier, "--out", out.toString(), "--out-keep", "0"));
    }

    /** {@code examples/python/<script>} on {@code python}, with the client on its path. */
    ProcessBuilder python(String python, String script, String... args) {
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

    /** A {@code viper} command in a JVM of its own, with this test's class path. */
    ProcessBuilder viper(String... args) {
        return new ProcessBuilder(javaCommand("io.viper.cli.ViperMain", args)).directory(dir.toFile());
    }

    static List<String> javaCommand(String mainClass, String... args) {
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

    static String sha256(Tensor t) throws Exception {
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        md.update(t.data().asByteBuffer());
        return HexFormat.of().formatHex(md.digest());
    }

    @Override
    public void close() throws Exception {
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
}
