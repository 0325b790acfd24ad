package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.CheckpointPolicy;
import io.viper.PublishHandle;
import io.viper.Viper;
import io.viper.ViperProducer;
import io.viper.manifest.Manifest;
import io.viper.notify.embedded.EmbeddedBroker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A producer that exits takes the versions it served with it when there is no PFS: a consumer started after it left
 * learns of the newest version from the broker, finds nobody at its locations, and says so when its {@code --timeout}
 * ends, instead of only that no update came. With a PFS, {@code flush} waits for the copy there, from which a consumer
 * reads the version after the producer left.
 */
class GoneProducerTest {
    @TempDir
    Path pfs;

    @TempDir
    Path out;

    @Test
    void aConsumerOfAVersionWhoseProducerIsGoneSaysSoWhenItsTimeoutEnds() throws Exception {
        try (EmbeddedBroker broker = EmbeddedBroker.start("127.0.0.1", 0)) {
            String notifier = "embedded://127.0.0.1:" + broker.port();
            Manifest m;
            try (Viper gone = Viper.builder()
                            .notifier(notifier)
                            .transports("tcp://127.0.0.1:0")
                            .config("viper.producer.inline.bytes", "0")
                            .build(); // else the announcement carries the bytes
                    ViperProducer producer = gone.producer("m", CheckpointPolicy.never())) {
                m = producer.publish(sink -> sink.addFloats("w", new long[] {4}, new float[] {1, 2, 3, 4}), Map.of())
                        .announced()
                        .get(60, TimeUnit.SECONDS);
            }
            InspectCommandTest.Run r = assertTimeoutPreemptively(
                    Duration.ofSeconds(60),
                    () -> InspectCommandTest.run("consume", "--model", "m", "--notifier", notifier, "--timeout", "3s"));
            assertEquals(ViperMain.EXIT_NO_UPDATE, r.exit(), r.err());
            String said = "viper: no update of m within 3 s: version 1 of m was announced by a producer that is gone "
                    + "(connection refused at " + m.locations().getFirst().uri() + "); no PFS copy (a producer with a "
                    + "PFS leaves its versions there when it exits)";
            assertEquals(
                    List.of(said),
                    r.errLines().stream().filter(l -> l.startsWith("viper:")).toList(),
                    r.err());
        }
    }

    @Test
    void withAPfsTheVersionsOutliveTheProducerAndFlushWaitsForTheCopy() throws Exception {
        try (EmbeddedBroker broker = EmbeddedBroker.start("127.0.0.1", 0)) {
            String notifier = "embedded://127.0.0.1:" + broker.port();
            try (Viper gone = Viper.builder()
                            .notifier(notifier)
                            .transports("tcp://127.0.0.1:0")
                            .pfsRoot(pfs)
                            .config("viper.producer.inline.bytes", "0")
                            .build();
                    ViperProducer producer = gone.producer("m", CheckpointPolicy.never())) {
                PublishHandle h = producer.publish(
                        sink -> sink.addFloats("w", new long[] {4}, new float[] {1, 2, 3, 4}), Map.of());
                producer.flush();
                assertTrue(
                        h.durable().isDone() && !h.durable().isCompletedExceptionally(),
                        "flush returned once the PFS copy was written");
            }
            InspectCommandTest.Run r = assertTimeoutPreemptively(
                    Duration.ofSeconds(60),
                    () -> InspectCommandTest.run(
                            "consume",
                            "--model",
                            "m",
                            "--notifier",
                            notifier,
                            "--pfs",
                            pfs.toString(),
                            "--once",
                            "--timeout",
                            "20s",
                            "--out",
                            out.toString()));
            assertEquals(0, r.exit(), r.err());
            assertTrue(Files.exists(out.resolve("m-v1.safetensors")), "version 1 arrived from the PFS: " + r.err());
        }
    }
}
