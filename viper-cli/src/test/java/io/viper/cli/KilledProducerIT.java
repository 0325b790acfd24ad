package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ModelLease;
import io.viper.Viper;
import io.viper.ViperConsumer;
import io.viper.errors.ViperTimeoutException;
import io.viper.tensor.Tensor;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * A producer process killed (SIGKILL) the moment a large version is announced, while the consumer in this JVM starts
 * fetching it (its receive buffer, the connection, the transfer; where exactly the kill lands is up to the scheduler,
 * and {@code PipelinedIntegrityTest} covers a death after some pieces arrived): the consumer keeps serving the version
 * it had, intact, and never swaps in v2.
 */
class KilledProducerIT {
    private static final long BIG = 256L << 20;

    @Test
    void aProducerKilledMidPipelineLeavesTheOldModelServing() throws Exception {
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
                KilledProducerMain.class.getName(),
                "tcp",
                Long.toString(BIG)));
        Process producer = new ProcessBuilder(cmd)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        try {
            BufferedReader out =
                    new BufferedReader(new InputStreamReader(producer.getInputStream(), StandardCharsets.UTF_8));
            String line = out.readLine();
            assertTrue(line != null && line.startsWith("NOTIFIER "), "the producer printed " + line);
            try (Viper viper = Viper.builder()
                            .notifier(line.substring("NOTIFIER ".length()))
                            .consumerPaths("tcp")
                            .config("viper.consumer.retry.backoff.ms", "50")
                            .build();
                    ViperConsumer consumer = viper.consumer("killed")) {
                assertEquals(1, consumer.awaitVersion(1, Duration.ofSeconds(60)));
                AtomicBoolean killed = new AtomicBoolean();
                consumer.onManifest(m -> {
                    if (m.version() == 2 && killed.compareAndSet(false, true)) {
                        producer.destroyForcibly(); // v2 is announced: the consumer's fetch of 256 MiB starts now
                    }
                });
                OutputStream in = producer.getOutputStream();
                in.write("publish\n".getBytes(StandardCharsets.UTF_8));
                in.flush();
                assertTrue(producer.waitFor(60, TimeUnit.SECONDS), "the producer was killed");
                assertTrue(killed.get(), "killed once v2 was announced");
                // The fetch of v2 fails and its retries find nobody: v2 never arrives.
                assertThrows(ViperTimeoutException.class, () -> consumer.awaitVersion(2, Duration.ofSeconds(3)));
                assertEquals(1, consumer.version());
                try (ModelLease m = consumer.current()) {
                    Tensor w = m.tensor("w");
                    assertEquals(1 << 20, w.data().byteSize());
                    for (long i = 0; i < w.data().byteSize(); i += 4096) {
                        assertEquals(1, w.data().get(ValueLayout.JAVA_BYTE, i), "v1's bytes, untouched");
                    }
                }
            }
        } finally {
            producer.destroyForcibly();
            producer.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
