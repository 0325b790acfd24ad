package io.viper.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.format.SafetensorsFile;
import io.viper.tensor.Tensor;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The {@code viper} processes of one fault test, each a JVM of its own: started with {@link #start}, their stdout lines
 * queued for the test, their stderr in a file, and every one killed when the fleet closes. Also writes the models they
 * publish and compares what consumers wrote.
 */
final class Fleet implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** The test class path without test classes and test jars. */
    static final String CLASS_PATH = Arrays.stream(
                    System.getProperty("java.class.path").split(File.pathSeparator))
            .filter(e -> !e.endsWith("test-classes") && !e.endsWith("-tests.jar"))
            .collect(Collectors.joining(File.pathSeparator));

    private final Path dir;
    private final List<Member> members = new ArrayList<>();

    Fleet(Path dir) {
        this.dir = dir;
    }

    /** One running {@code viper} command. */
    static final class Member {
        final String name;
        final Process process;
        final Path stderr;
        final BlockingQueue<String> lines = new LinkedBlockingQueue<>();

        Member(String name, Process process, Path stderr) {
            this.name = name;
            this.process = process;
            this.stderr = stderr;
            Thread.ofVirtual().start(() -> {
                try (BufferedReader r =
                        new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String l; (l = r.readLine()) != null; ) {
                        lines.add(l);
                    }
                } catch (IOException e) {
                    // the process died
                }
            });
        }

        /** The next line it printed, within {@code wait}; fails naming its stderr when none came. */
        String line(Duration wait) throws InterruptedException {
            String l = lines.poll(wait.toMillis(), TimeUnit.MILLISECONDS);
            assertNotNull(
                    l,
                    () -> name + " printed nothing within " + wait + "; alive " + process.isAlive() + "; stderr: "
                            + stderr());
            return l;
        }

        /** The next line as JSON. */
        JsonNode json(Duration wait) throws Exception {
            return JSON.readTree(line(wait));
        }

        /**
         * The version the next line reports ({@code viper publish} and {@code viper consume} print one JSON object per
         * version); a line that is not such an object fails naming it and the stderr.
         */
        long version(Duration wait) throws Exception {
            String l = line(wait);
            JsonNode v;
            try {
                v = JSON.readTree(l).get("version");
            } catch (IOException e) {
                v = null;
            }
            if (v == null || !v.canConvertToLong()) {
                throw new AssertionError(name + " printed a line without a version: '" + l + "'; stderr: " + stderr());
            }
            return v.asLong();
        }

        /** SIGKILL, and waits for the end. */
        void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }

        /** Waits for it to exit within {@code wait} and returns its exit code. */
        int exit(Duration wait) throws InterruptedException {
            if (!process.waitFor(wait.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new AssertionError(name + " did not exit within " + wait + "; stderr: " + stderr());
            }
            return process.exitValue();
        }

        String stderr() {
            try {
                return Files.readString(stderr);
            } catch (IOException e) {
                return "";
            }
        }
    }

    /**
     * Starts {@code viper args...} in a JVM of its own, on the command line tool's class path (this module's, without
     * the test jars: their fake providers must not join a real process); {@code name} names its stderr file.
     */
    Member start(String name, String... args) throws IOException {
        return startJvm(name, List.of(), CLASS_PATH, "io.viper.cli.ViperMain", args);
    }

    /**
     * Starts {@code mainClass args...} in a JVM of its own with {@code jvmOptions} (after the usual ones) on
     * {@code classPath}; {@code name} names its stderr file.
     */
    Member startJvm(String name, List<String> jvmOptions, String classPath, String mainClass, String... args)
            throws IOException {
        Path err = dir.resolve(name + "-" + members.size() + ".err");
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current().info().command().orElseThrow(),
                "--enable-native-access=ALL-UNNAMED",
                "-Xmx512m"));
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", classPath, mainClass));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd)
                .directory(dir.toFile())
                .redirectError(err.toFile())
                .start();
        Member m = new Member(name, p, err);
        members.add(m);
        return m;
    }

    /**
     * Runs {@code viper consume --model m --once} with {@code args} (notifier, paths, settings) and fails unless it
     * exits 0 having written v{@code version} of {@code source}, byte-identical: a normal consumer holding the model.
     */
    void consumesExactly(Path source, long version, String... args) throws Exception {
        Path out = dir.resolve("read-" + members.size());
        List<String> cmd = new ArrayList<>(
                List.of("consume", "--model", "m", "--once", "--out", out.toString(), "--timeout", "60s"));
        cmd.addAll(List.of(args));
        Member reader = start("consume", cmd.toArray(String[]::new));
        assertEquals(0, reader.exit(Duration.ofSeconds(90)), reader.stderr());
        assertSameTensors(source, out.resolve("m-v" + version + ".safetensors"));
    }

    /** Writes a safetensors file of one U8 tensor of {@code bytes} bytes whose content depends on {@code seed}. */
    static Path model(Path file, long bytes, int seed) throws IOException {
        byte[] header = ("{\"w\":{\"dtype\":\"U8\",\"shape\":[" + bytes + "],\"data_offsets\":[0," + bytes + "]}}")
                .getBytes(StandardCharsets.US_ASCII);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, header.length));
            ch.write(ByteBuffer.wrap(header));
            ByteBuffer block = ByteBuffer.allocate(1 << 20);
            for (long done = 0; done < bytes; ) {
                block.clear();
                long x = seed * 0x9E3779B97F4A7C15L + done;
                while (block.remaining() >= 8) {
                    x ^= x << 13;
                    x ^= x >>> 7;
                    x ^= x << 17;
                    block.putLong(x);
                }
                block.flip().limit((int) Math.min(block.limit(), bytes - done));
                done += block.remaining();
                while (block.hasRemaining()) {
                    ch.write(block);
                }
            }
        }
        return file;
    }

    /** Fails unless {@code written} holds the same tensors as {@code source}, byte for byte. */
    static void assertSameTensors(Path source, Path written) {
        try (SafetensorsFile a = SafetensorsFile.open(source);
                SafetensorsFile b = SafetensorsFile.open(written)) {
            assertEquals(a.tensors().size(), b.tensors().size());
            for (Tensor t : a.tensors()) {
                assertEquals(
                        -1, t.data().mismatch(b.tensor(t.name()).data()), "bytes of " + t.name() + " in " + written);
            }
        }
    }

    /** Kills every process still running. */
    @Override
    public void close() throws InterruptedException {
        for (Member m : members) {
            m.process.destroyForcibly();
        }
        for (Member m : members) {
            m.process.waitFor(30, TimeUnit.SECONDS);
            try (OutputStream ignored = m.process.getOutputStream()) {
                // closes the pipe
            } catch (IOException e) {
                // already gone
            }
        }
    }
}
