package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.CheckpointPolicy;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperProducer;
import io.viper.manifest.Location;
import io.viper.manifest.Tier;
import io.viper.notify.embedded.EmbeddedBroker;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@code viper consume --out} leaves on disk (the newest {@code --out-keep} versions it wrote, not every one), and
 * where {@code viper publish} says a version's PFS copy is (a file, or blocks and the command that exports them).
 */
class ConsumeOutTest {
    @TempDir
    Path dir;

    @Test
    void consumeOutKeepsTheNewestVersionsItWrote() throws Exception {
        Path out = dir.resolve("out");
        Path mine = Files.createDirectories(out).resolve("m-v0.safetensors");
        Files.writeString(mine, "not written by this consume: never deleted");
        try (EmbeddedBroker broker = EmbeddedBroker.start("127.0.0.1", 0);
                Viper viper = Viper.builder()
                        .notifier("embedded://127.0.0.1:" + broker.port())
                        .transports("tcp://127.0.0.1:0")
                        .build();
                ViperProducer producer = viper.producer("m", CheckpointPolicy.never())) {
            producer.publish(version(1), Map.of()).announced().get();
            CompletableFuture<InspectCommandTest.Run> consume =
                    CompletableFuture.supplyAsync(() -> InspectCommandTest.run(
                            "consume",
                            "--model",
                            "m",
                            "--notifier",
                            "embedded://127.0.0.1:" + broker.port(),
                            "--timeout",
                            "3s",
                            "--out",
                            out.toString(),
                            "--out-keep",
                            "2"));
            awaitFile(out.resolve("m-v1.safetensors"), consume);
            for (int v = 2; v <= 4; v++) {
                producer.publish(version(v), Map.of()).announced().get();
                awaitFile(out.resolve("m-v" + v + ".safetensors"), consume);
            }
            InspectCommandTest.Run r = consume.get();
            assertEquals(ViperMain.EXIT_NO_UPDATE, r.exit(), r.err());
        }
        assertEquals(
                List.of(mine, out.resolve("m-v3.safetensors"), out.resolve("m-v4.safetensors")),
                InspectCommandTest.safetensorsIn(out));
        assertEquals(
                2,
                InspectCommandTest.run("consume", "--model", "m", "--out-keep", "-1")
                        .exit());
    }

    @Test
    void publishSaysWhereThePfsCopyIsOrHowToExportBlocks() throws Exception {
        Path file = Files.createDirectories(dir.resolve("pfs/m/1")).resolve("model.safetensors");
        Files.writeString(file, "x");
        Path blocks = dir.resolve("pfs/m/2/model.safetensors"); // kept as blocks: no file
        List<Location> tcpOnly = List.of(new Location(URI.create("tcp://127.0.0.1:1/m/1"), Tier.HOST));
        assertTrue(PfsCopy.describe(tcpOnly, "m", 1).isEmpty());

        ObjectNode one = PfsCopy.describe(List.of(new Location(file.toUri(), Tier.PFS)), "m", 1)
                .orElseThrow();
        assertEquals(file.toString(), one.get("file").asText());
        ObjectNode two = PfsCopy.describe(List.of(new Location(blocks.toUri(), Tier.PFS)), "m", 2)
                .orElseThrow();
        assertFalse(two.has("file"), "no path that does not exist");
        assertEquals(dir.resolve("pfs/.blocks").toString(), two.get("blocks").asText());
        assertEquals(
                "viper export --pfs " + dir.resolve("pfs") + " --model m --version 2 --out m-v2.safetensors",
                two.get("export").asText());
    }

    private static Snapshot version(int v) {
        return sink -> sink.addFloats("w", new long[] {4}, new float[] {v, v, v, v});
    }

    private static void awaitFile(Path file, CompletableFuture<InspectCommandTest.Run> consume) throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (!Files.exists(file)) {
            if (consume.isDone() || System.nanoTime() > deadline) {
                throw new AssertionError("no " + file + "; consume: " + (consume.isDone() ? consume.get() : "running"));
            }
            Thread.sleep(20);
        }
    }
}
