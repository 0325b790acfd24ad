package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.format.SafetensorsFile;
import io.viper.spi.Providers;
import io.viper.tensor.Tensor;
import io.viper.testing.Ports;
import io.viper.testing.TestData;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two processes exchange a model written by an independent tool: {@code viper consume} in one JVM, {@code viper
 * publish} in another, over each transport. The consumer's output file must hold the same tensors, byte for byte.
 */
class PublishConsumeIT {
    @TempDir
    Path tmp;

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ucx", "file"})
    void modelCrossesBetweenProcesses(String path) throws Exception {
        if (!path.equals("file")) {
            var p = Providers.transport(path);
            Assumptions.assumeTrue(p.isPresent(), () -> "no " + path + ":// transport installed");
            Assumptions.assumeTrue(
                    p.get().unavailableReason().isEmpty(),
                    () -> path + " unavailable: " + p.get().unavailableReason().orElse(""));
        }
        Path source = TestData.root().resolve("safetensors/all_dtypes.safetensors");
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        Path pfs = tmp.resolve("pfs");
        Path out = tmp.resolve("out");

        Process publisher = CliProcesses.viper(
                        tmp,
                        "publish",
                        "--model",
                        "m",
                        "--file",
                        source.toString(),
                        "--notifier",
                        notifier,
                        "--pfs",
                        pfs.toString(),
                        "--linger",
                        "60s")
                .redirectError(tmp.resolve("publish.err").toFile())
                .start();
        try {
            BufferedReader pubOut =
                    new BufferedReader(new InputStreamReader(publisher.getInputStream(), StandardCharsets.UTF_8));
            String announced = pubOut.readLine();
            assertTrue(
                    announced != null && announced.contains("\"version\":"),
                    () -> "publish printed " + announced + "; stderr: " + read(tmp.resolve("publish.err")));
            // The publisher hosts a new broker on a fixed port, which cannot know what consumers saw before: its first
            // version is the clock.
            long version = new ObjectMapper().readTree(announced).get("version").asLong();
            assertTrue(version > 1_700_000_000_000L, announced);
            Process consumer = CliProcesses.viper(
                            tmp,
                            "consume",
                            "--model",
                            "m",
                            "--notifier",
                            notifier,
                            "--pfs",
                            pfs.toString(),
                            "--once",
                            "--paths",
                            path,
                            "--out",
                            out.toString(),
                            "--timeout",
                            "60s")
                    .redirectError(tmp.resolve("consume.err").toFile())
                    .start();
            assertTrue(consumer.waitFor(90, TimeUnit.SECONDS), "consumer finished");
            String line = new String(consumer.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            assertEquals(
                    0,
                    consumer.exitValue(),
                    () -> "consume stdout: " + line + "; stderr: " + read(tmp.resolve("consume.err")));
            JsonNode json = new ObjectMapper().readTree(line);
            assertEquals("m", json.get("model").asText());
            assertEquals(version, json.get("version").asLong());
            assertEquals(path, json.get("path").asText());
            assertTrue(json.get("latency_ms").asDouble() >= 0);
            try (SafetensorsFile a = SafetensorsFile.open(source);
                    SafetensorsFile b = SafetensorsFile.open(out.resolve("m-v" + version + ".safetensors"))) {
                assertEquals(a.tensors().size(), b.tensors().size());
                for (Tensor t : a.tensors()) {
                    Tensor u = b.tensor(t.name());
                    assertEquals(t.dtype(), u.dtype(), t.name());
                    assertEquals(-1, t.data().mismatch(u.data()), "bytes of " + t.name());
                }
            }
        } finally {
            publisher.destroy();
            publisher.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (Exception e) {
            return "";
        }
    }
}
