package io.viper.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.notify.embedded.EmbeddedNotifierProvider;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.testing.Ports;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Processes die: a producer killed with SIGKILL before it announced, in the middle of its PFS write and while serving;
 * a consumer killed in the middle of a transfer; a standalone broker killed and restarted. Every case ends with a
 * normal consumer holding the newest model byte-identical, and versions only grow.
 */
class ProcessFaultsIT {
    private static final Duration WAIT = Duration.ofSeconds(90);

    @TempDir
    Path tmp;

    private static void awaitListening(int port) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(InetAddress.ofLiteral("127.0.0.1"), port), 100);
                return;
            } catch (IOException e) {
                Thread.sleep(5);
            }
        }
        throw new AssertionError("nothing listened on " + port);
    }

    /** Waits for a store in progress (a {@code .tmp-*} directory) in {@code modelDir}. */
    private static Path awaitTemporary(Path modelDir) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            List<Path> tmp = temporaries(modelDir);
            if (!tmp.isEmpty()) {
                return tmp.getFirst();
            }
            Thread.sleep(1);
        }
        throw new AssertionError("no store started in " + modelDir);
    }

    private static List<Path> temporaries(Path modelDir) throws IOException {
        if (!Files.isDirectory(modelDir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(modelDir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(".")).toList();
        }
    }

    /** Reads the follower's JSON lines until one names {@code version}. */
    private static void awaitUpdate(Fleet.Member follower, long version) throws Exception {
        while (true) {
            long v = follower.version(WAIT);
            if (v == version) {
                return;
            }
            assertTrue(v < version, follower.name + " got v" + v + " while waiting for v" + version);
        }
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void aProducerKilledAtEachPointOfItsPipelineIsReplacedAndFollowed() throws Exception {
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        Path pfs = tmp.resolve("pfs");
        Path out = tmp.resolve("out");
        Path big = Fleet.model(tmp.resolve("big.safetensors"), 256L << 20, 1);
        Path b = Fleet.model(tmp.resolve("b.safetensors"), 3L << 20, 2);
        Path c = Fleet.model(tmp.resolve("c.safetensors"), 5L << 20, 3);
        try (Fleet fleet = new Fleet(tmp)) {
            Fleet.Member follower = fleet.start(
                    "follower",
                    "consume",
                    "--model",
                    "m",
                    "--notifier",
                    notifier,
                    "--pfs",
                    pfs.toString(),
                    "--out",
                    out.toString(),
                    "--timeout",
                    "200s");

            // 1. Before its first announcement: its broker listens, the 256 MiB model is still being staged.
            Fleet.Member beforeAnnounce = fleet.start(
                    "publish-killed-early",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    big.toString(),
                    "--notifier",
                    notifier,
                    "--pfs",
                    pfs.toString(),
                    "--linger",
                    "60s");
            awaitListening(port);
            beforeAnnounce.kill();
            System.out.println("fault: producer SIGKILL as its broker started listening, "
                    + (beforeAnnounce.lines.isEmpty()
                            ? "before it announced anything"
                            : "after it announced (the window passed)"));

            // 2. In the middle of its PFS write.
            Fleet.Member midFlush = fleet.start(
                    "publish-killed-mid-flush",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    big.toString(),
                    "--notifier",
                    notifier,
                    "--pfs",
                    pfs.toString(),
                    "--linger",
                    "60s");
            Path partial = awaitTemporary(pfs.resolve("m"));
            midFlush.kill();
            System.out.println(
                    "fault: producer SIGKILL while writing " + partial.getFileName() + " to the PFS; left behind: "
                            + temporaries(pfs.resolve("m")).stream()
                                    .map(p -> p.getFileName().toString())
                                    .toList());

            // 3. After it announced and flushed, while serving.
            Fleet.Member serving = fleet.start(
                    "publish-killed-serving",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    b.toString(),
                    "--notifier",
                    notifier,
                    "--pfs",
                    pfs.toString(),
                    "--linger",
                    "60s");
            long vb = serving.version(WAIT);
            serving.kill();
            System.out.println("fault: producer SIGKILL while serving v" + vb);

            // A new producer: it numbers after everything before, leaves no partial file, and is followed.
            Fleet.Member next = fleet.start(
                    "publish-next",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    c.toString(),
                    "--notifier",
                    notifier,
                    "--pfs",
                    pfs.toString(),
                    "--linger",
                    "120s");
            long vc = next.version(WAIT);
            assertTrue(vc > vb, "v" + vc + " follows v" + vb);
            assertEquals(
                    List.of(),
                    temporaries(pfs.resolve("m")),
                    "the restarted producer removed what the killed ones left");
            assertEquals(vc + "\n", Files.readString(pfs.resolve("m").resolve("LATEST"), StandardCharsets.US_ASCII));
            awaitUpdate(follower, vc);
            Fleet.assertSameTensors(c, out.resolve("m-v" + vc + ".safetensors"));

            fleet.consumesExactly(c, vc, "--notifier", notifier, "--pfs", pfs.toString(), "--paths", "file");
            System.out.println("fault: after three producer kills, the follower and a fresh PFS reader hold v" + vc
                    + " byte-identical");
        }
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void aConsumerKilledMidTransferLeavesTheProducerServing() throws Exception {
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        Path big = Fleet.model(tmp.resolve("big.safetensors"), 256L << 20, 4);
        try (Fleet fleet = new Fleet(tmp)) {
            Fleet.Member producer = fleet.start(
                    "publish",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    big.toString(),
                    "--notifier",
                    notifier,
                    "--transports",
                    "tcp://127.0.0.1:0",
                    "--linger",
                    "150s");
            long v = producer.version(WAIT);
            for (int i = 0; i < 2; i++) {
                Fleet.Member victim = fleet.start(
                        "consume-killed",
                        "consume",
                        "--model",
                        "m",
                        "--notifier",
                        notifier,
                        "--paths",
                        "tcp",
                        "--once",
                        "--out",
                        tmp.resolve("victim").toString(),
                        "--timeout",
                        "60s");
                Thread.sleep(1500 + 500L * i); // its JVM is up and reading 256 MiB
                victim.kill();
            }
            assertTrue(producer.process.isAlive(), "the producer survives its consumers' deaths: " + producer.stderr());
            fleet.consumesExactly(big, v, "--notifier", notifier, "--paths", "tcp");
            System.out.println("fault: two consumers SIGKILLed mid-transfer over tcp; the producer kept serving v" + v
                    + " and a new consumer read it byte-identical");
        }
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void aBrokerKilledAndRestartedIsRejoined() throws Exception {
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 2L << 20, 5);
        Path b = Fleet.model(tmp.resolve("b.safetensors"), 3L << 20, 6);
        Path out = tmp.resolve("out");
        try (Fleet fleet = new Fleet(tmp)) {
            Fleet.Member broker = fleet.start("broker", "broker", "--port", Integer.toString(port));
            assertTrue(broker.line(WAIT).startsWith("viper broker listening on"));
            Fleet.Member first = fleet.start(
                    "publish-a",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    a.toString(),
                    "--notifier",
                    notifier,
                    "--linger",
                    "150s");
            long va = first.version(WAIT);
            Fleet.Member follower = fleet.start(
                    "follower",
                    "consume",
                    "--model",
                    "m",
                    "--notifier",
                    notifier,
                    "--out",
                    out.toString(),
                    "--timeout",
                    "150s");
            awaitUpdate(follower, va);

            broker.kill();
            Fleet.Member again = fleet.start("broker-again", "broker", "--port", Integer.toString(port));
            assertTrue(again.line(WAIT).startsWith("viper broker listening on"));
            // The live producer re-announces its version to the new broker, which so learns it again.
            try (Notifier probe = new EmbeddedNotifierProvider()
                    .open(URI.create(notifier), NotifierProvider.Role.CONSUMER, ViperConfig.defaults())) {
                long deadline = System.nanoTime() + WAIT.toNanos();
                while (probe.latestVersion("m").orElse(0) < va && System.nanoTime() < deadline) {
                    Thread.sleep(100);
                }
                assertEquals(
                        va,
                        probe.latestVersion("m").orElse(0),
                        "the restarted broker regained v" + va + " from the producer");
            }
            Fleet.Member second = fleet.start(
                    "publish-b",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    b.toString(),
                    "--notifier",
                    notifier,
                    "--linger",
                    "150s");
            long vb = second.version(WAIT);
            assertTrue(vb > va, "v" + vb + " follows v" + va);
            awaitUpdate(follower, vb);
            Fleet.assertSameTensors(b, out.resolve("m-v" + vb + ".safetensors"));
            System.out.println("fault: broker SIGKILL and restart on the same port; the producer re-announced v" + va
                    + ", the follower reconnected and took v" + vb + " byte-identical");
        }
    }
}
