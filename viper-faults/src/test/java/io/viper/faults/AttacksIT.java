package io.viper.faults;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.viper.ModelLease;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperConsumer;
import io.viper.auth.Handshake;
import io.viper.auth.ManifestTrust;
import io.viper.auth.Role;
import io.viper.format.SafetensorsFile;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.notify.embedded.EmbeddedNotifierProvider;
import io.viper.notify.embedded.internal.NotifyProtocol;
import io.viper.spi.ByteRange;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportServer;
import io.viper.testing.HostilePeers;
import io.viper.testing.Ports;
import io.viper.testing.RawPeer;
import io.viper.testing.TestSecrets;
import io.viper.testing.TestStagedCheckpoint;
import io.viper.transfer.tcp.TcpTransportProvider;
import io.viper.transfer.ucx.UcxTransportProvider;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A running producer under attack: hostile peers on every one of its ports (its broker, tcp and ucx), forged manifests
 * on its broker (a poisoned version, a reused version, other bytes behind the right hashes, another model's file), and,
 * with credentials, strangers who hold none. Each case ends with a normal consumer holding the producer's model
 * byte-identical.
 */
class AttacksIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final String[] SHORT_LIMITS = {
        "--set",
        "viper.limits.handshake.ms=1000",
        "--set",
        "viper.limits.idle.ms=1000",
        "--set",
        "viper.limits.connections.per.peer=8"
    };

    @TempDir
    Path tmp;

    /** {@code command} then {@code extra}: options go after the subcommand. */
    private static String[] args(String[] extra, String... command) {
        List<String> all = new ArrayList<>(List.of(command));
        all.addAll(List.of(extra));
        return all.toArray(String[]::new);
    }

    /** The latest manifest of {@code model} the broker at {@code notifier} holds, heard as a consumer. */
    static Manifest latest(String notifier, String model, ViperConfig config) throws InterruptedException {
        BlockingQueue<Manifest> q = new LinkedBlockingQueue<>();
        try (Notifier n = new EmbeddedNotifierProvider()
                        .open(URI.create(notifier), NotifierProvider.Role.CONSUMER, config);
                Notifier.Subscription s = n.subscribe(model, q::add)) {
            Manifest m = q.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
            assertNotNull(m, "no manifest of " + model + " from " + notifier);
            return m;
        }
    }

    private static Location at(Manifest m, String scheme) {
        return m.locations().stream()
                .filter(l -> l.scheme().equals(scheme))
                .findFirst()
                .orElseThrow();
    }

    /** Reads all of {@code m} from {@code at} and compares it with the tensor data of {@code source}. */
    private static void readsSource(TransportClient client, Manifest m, Location at, Path source) {
        try (Arena arena = Arena.ofConfined();
                SafetensorsFile f = SafetensorsFile.open(source)) {
            MemorySegment dst = arena.allocate(m.totalBytes());
            client.read(m, at, List.of(new ByteRange(0, m.totalBytes(), 0)), dst);
            assertEquals(-1, f.tensor("w").data().mismatch(dst), "byte-identical from " + at.uri());
        }
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void hostilePeersOnEveryPortOfARunningProducer() throws Exception {
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 4L << 20, 1);
        boolean ucx = new UcxTransportProvider().unavailableReason().isEmpty();
        try (Fleet fleet = new Fleet(tmp);
                TransportClient tcpClient = new TcpTransportProvider().openClient(ViperConfig.defaults())) {
            Fleet.Member producer = fleet.start(
                    "publish",
                    args(
                            SHORT_LIMITS,
                            "publish",
                            "--model",
                            "m",
                            "--file",
                            a.toString(),
                            "--notifier",
                            notifier,
                            "--transports",
                            ucx ? "ucx://127.0.0.1:0,tcp://127.0.0.1:0" : "tcp://127.0.0.1:0",
                            "--linger",
                            "200s"));
            producer.json(WAIT);
            Manifest m = latest(notifier, "m", ViperConfig.defaults());
            List<String> report = new ArrayList<>(HostilePeers.tryAll(new HostilePeers.Target(
                    "127.0.0.1",
                    port,
                    "embedded",
                    new byte[0],
                    () -> {
                        try {
                            assertEquals(
                                    m.version(),
                                    latest(notifier, "m", ViperConfig.defaults())
                                            .version());
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                    },
                    8)));
            Location tcp = at(m, "tcp");
            report.addAll(HostilePeers.tryAll(new HostilePeers.Target(
                    "127.0.0.1", tcp.uri().getPort(), "tcp", new byte[0], () -> readsSource(tcpClient, m, tcp, a), 8)));
            if (ucx) {
                Location u = at(m, "ucx");
                try (TransportClient ucxClient = new UcxTransportProvider().openClient(ViperConfig.defaults())) {
                    report.addAll(HostilePeers.tryAll(new HostilePeers.Target(
                            "127.0.0.1",
                            u.uri().getPort(),
                            "ucx",
                            ByteBuffer.allocate(4).putInt(0x56554332).array(),
                            () -> readsSource(ucxClient, m, u, a),
                            8)));
                }
            }
            report.forEach(line -> System.out.println("fault: " + line));
            assertTrue(producer.process.isAlive(), producer.stderr());
            fleet.consumesExactly(a, m.version(), "--notifier", notifier);
        }
    }

    /** A PUBLISH frame of the broker protocol carrying {@code manifest} as {@code model}. */
    static byte[] publishFrame(long requestId, String model, byte[] manifest) throws Exception {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        DataOutputStream d = new DataOutputStream(b);
        byte[] name = model.getBytes(StandardCharsets.UTF_8);
        d.writeInt(2 + 8 + 2 + name.length + 4 + manifest.length);
        d.writeByte(NotifyProtocol.VERSION);
        d.writeByte(NotifyProtocol.PUBLISH);
        d.writeLong(requestId);
        d.writeShort(name.length);
        d.write(name);
        d.writeInt(manifest.length); // the manifest alone: no version bytes after it
        d.write(manifest);
        return b.toByteArray();
    }

    /** Publishes {@code forged} by hand and returns the broker's answer: its type byte, then the rest. */
    private static byte[] forge(RawPeer forger, long id, Manifest forged) throws Exception {
        // Signed with this user's key: what a process of the user could announce; the consumer's checks of the bytes
        // are what stops it (ForgeriesIT covers forgers without the key).
        forger.send(publishFrame(
                id,
                forged.model(),
                ManifestTrust.fromConfig(ViperConfig.defaults()).seal(ManifestCodec.encode(forged))));
        byte[] answer = forger.readFrame();
        return Arrays.copyOfRange(answer, 1, answer.length);
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void forgedManifestsWithTheKeyDoNoHarmOnLoopback() throws Exception {
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        Path pfs = tmp.resolve("pfs");
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 2L << 20, 11);
        Path other = Fleet.model(tmp.resolve("other.safetensors"), 2L << 20, 12);
        Path c = Fleet.model(tmp.resolve("c.safetensors"), 2L << 20, 13);
        try (Fleet fleet = new Fleet(tmp)) {
            // Another model in the same PFS, whose file a forger will point at.
            Fleet.Member otherProducer = fleet.start(
                    "publish-other",
                    "publish",
                    "--model",
                    "other",
                    "--file",
                    other.toString(),
                    "--notifier",
                    "embedded://127.0.0.1:0",
                    "--pfs",
                    pfs.toString(),
                    "--linger",
                    "0");
            JsonNode otherJson = otherProducer.json(WAIT);
            assertEquals(0, otherProducer.exit(WAIT), otherProducer.stderr());
            String otherFile = otherJson
                    .get("locations")
                    .get(otherJson.get("locations").size() - 1)
                    .asText();
            Manifest otherManifest = ManifestCodec.decode(
                    Files.readAllBytes(Path.of(URI.create(otherFile)).resolveSibling("manifest.json")), "test");

            Fleet.Member producer = fleet.start(
                    "publish",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    a.toString(),
                    "--notifier",
                    notifier,
                    "--pfs",
                    pfs.toString(),
                    "--transports",
                    "tcp://127.0.0.1:0",
                    "--linger",
                    "200s");
            long v = producer.version(WAIT);
            Manifest real = latest(notifier, "m", ViperConfig.defaults());
            try (Viper sdk = Viper.builder()
                            .notifier(notifier)
                            .pfsRoot(pfs)
                            .consumerPaths("tcp", "file")
                            .build();
                    ViperConsumer follower = sdk.consumer("m");
                    TestStagedCheckpoint wrongBytes = new TestStagedCheckpoint(
                            new Manifest("m", v + 1, "forger", 0, real.metadata(), real.tensors(), List.of()), 99);
                    TransportServer forgersServer = new TcpTransportProvider()
                            .openServer(URI.create("tcp://127.0.0.1:0"), ViperConfig.defaults());
                    RawPeer forger = new RawPeer("127.0.0.1", port, 10_000)) {
                forger.handshake("embedded", RawPeer.userSecret(), Role.PRODUCER);
                assertEquals(v, follower.awaitVersion(v, WAIT));
                forgersServer.expose(wrongBytes);
                // (1) A poisoned version, 2^63-1: refused as malformed (versions stop at 2^53-1).
                String poisoned = new String(ManifestCodec.encode(real), StandardCharsets.UTF_8)
                        .replace("\"version\":" + v, "\"version\":" + Long.MAX_VALUE);
                forger.send(publishFrame(1, "m", poisoned.getBytes(StandardCharsets.UTF_8)));
                assertEquals(NotifyProtocol.ERROR, forger.readFrame()[1], "a version of 2^63-1 is refused");
                System.out.println("fault: forged manifest with version 2^63-1: the broker refused it as malformed");
                // (2) The same version with other tensors: refused, a version is never reused.
                List<TensorEntry> otherHashes = real.tensors().stream()
                        .map(t -> new TensorEntry(t.info(), new ContentHash(7, 7), t.phash64()))
                        .toList();
                byte[] reuse = forge(
                        forger, 2, new Manifest("m", v, "forger", 0, real.metadata(), otherHashes, real.locations()));
                assertEquals(NotifyProtocol.ACK, reuse[0]);
                assertEquals(NotifyProtocol.STALE, reuse[9], "a reused version with other tensors is refused");
                System.out.println(
                        "fault: forged manifest reusing v" + v + " with other tensors: the broker refused it");
                // (3) The next version: the real hashes in front of other bytes, which the forger serves. Without
                // blocks: with the real block ids the follower would copy every block from the version it holds and
                // read nothing from the forger (DeltaUpdateTest covers a block whose bytes differ from its id).
                List<TensorEntry> withoutBlocks = real.tensors().stream()
                        .map(t -> new TensorEntry(t.info(), t.hash(), t.phash64()))
                        .toList();
                Manifest wrong = new Manifest(
                        "m", v + 1, "forger", 0, real.metadata(), withoutBlocks, List.of(forgersServer.location()));
                assertEquals(
                        NotifyProtocol.ACCEPTED,
                        forge(forger, 3, wrong)[9],
                        "signed with the producer's key, the broker takes it");
                // (4) The version after: another model's file in the same PFS, with that model's hashes.
                Manifest foreign = new Manifest(
                        "m",
                        v + 2,
                        "forger",
                        0,
                        otherManifest.metadata(),
                        otherManifest.tensors(),
                        List.of(new Location(URI.create(otherFile), Tier.PFS)));
                assertEquals(NotifyProtocol.ACCEPTED, forge(forger, 4, foreign)[9]);
                Thread.sleep(3000);
                assertEquals(v, follower.version(), "the follower kept the verified v" + v);
                try (ModelLease lease = follower.current();
                        SafetensorsFile f = SafetensorsFile.open(a)) {
                    assertEquals(
                            -1, f.tensor("w").data().mismatch(lease.tensor("w").data()), "and its bytes");
                }
                System.out.println("fault: forged v" + (v + 1)
                        + " (right hashes, other bytes behind them): the follower's check failed, it kept v" + v);
                System.out.println("fault: forged v" + (v + 2)
                        + " (another model's file in the PFS): the follower skipped the file, it kept v" + v);

                // A real producer carries on after the forged versions, and the follower takes its model.
                Fleet.Member next = fleet.start(
                        "publish-c",
                        "publish",
                        "--model",
                        "m",
                        "--file",
                        c.toString(),
                        "--notifier",
                        notifier,
                        "--transports",
                        "tcp://127.0.0.1:0",
                        "--linger",
                        "120s");
                long vc = next.version(WAIT);
                assertTrue(vc > v + 2, "v" + vc + " follows the forged v" + (v + 2));
                assertEquals(vc, follower.awaitVersion(vc, WAIT));
                try (ModelLease lease = follower.current();
                        SafetensorsFile f = SafetensorsFile.open(c)) {
                    assertEquals(
                            -1,
                            f.tensor("w").data().mismatch(lease.tensor("w").data()),
                            "the follower holds v" + vc + " byte-identical");
                }
                System.out.println("fault: after the forgeries a real producer published v" + vc
                        + " and the follower holds it byte-identical");
            }
        }
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void withCredentialsNothingIsReadOrForgedWithoutThem() throws Exception {
        int port = Ports.free();
        String notifier = "embedded://127.0.0.1:" + port;
        TestSecrets secrets = TestSecrets.make(tmp);
        Path a = Fleet.model(tmp.resolve("a.safetensors"), 2L << 20, 21);
        Path b = Fleet.model(tmp.resolve("b.safetensors"), 2L << 20, 22);
        boolean ucx = new UcxTransportProvider().unavailableReason().isEmpty();
        try (Fleet fleet = new Fleet(tmp)) {
            Fleet.Member producer = fleet.start(
                    "publish",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    a.toString(),
                    "--notifier",
                    notifier,
                    "--transports",
                    ucx ? "ucx://127.0.0.1:0,tcp://127.0.0.1:0" : "tcp://127.0.0.1:0",
                    "--set",
                    "viper.auth.secret.file=" + secrets.producer(),
                    "--linger",
                    "200s");
            long v = producer.version(WAIT);
            Manifest m = latest(notifier, "m", ViperConfig.of(secrets.consumerSetting()));

            // A stranger: no model name from the broker, no byte from tcp or ucx.
            Path strangerOut = tmp.resolve("stranger");
            Fleet.Member stranger = fleet.start(
                    "consume-stranger",
                    "consume",
                    "-v",
                    "--model",
                    "m",
                    "--notifier",
                    notifier,
                    "--once",
                    "--out",
                    strangerOut.toString(),
                    "--timeout",
                    "5s",
                    "--set",
                    "viper.auth.user.secret=off"); // as another user, who cannot read this user's secret
            // refused at once as a configuration error (exit 2), not retried until its timeout (exit 3)
            assertEquals(2, stranger.exit(WAIT), "refused by the broker: " + stranger.stderr());
            assertTrue(stranger.stderr().contains("requires credentials"), stranger.stderr());
            assertFalse(Files.exists(strangerOut) && !isEmpty(strangerOut), "the stranger wrote nothing");
            List<String> report = new ArrayList<>();
            for (Location l : m.locations()) {
                byte[] request = l.scheme().equals("ucx")
                        ? ByteBuffer.allocate(4).putInt(0x56554332).array()
                        : new byte[] {0, 0, 0, 12, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 'm'};
                report.addAll(HostilePeers.strangerGetsOnlyTheChallenge(
                        new HostilePeers.Target("127.0.0.1", l.uri().getPort(), l.scheme(), new byte[0], () -> {}, 64),
                        request));
            }
            report.addAll(HostilePeers.strangerGetsOnlyTheChallenge(
                    new HostilePeers.Target("127.0.0.1", port, "embedded", new byte[0], () -> {}, 64),
                    publishFrame(1, "m", ManifestCodec.encode(m.replaceLocations(List.of())))));
            report.forEach(line -> System.out.println("fault: with credentials on: " + line));

            // A consumer token reads but cannot publish; a forger without the secret cannot even finish the handshake.
            Fleet.Member tokenPublisher = fleet.start(
                    "publish-with-token",
                    "publish",
                    "--model",
                    "m",
                    "--file",
                    b.toString(),
                    "--notifier",
                    notifier,
                    "--set",
                    "viper.auth.secret.file=" + secrets.consumer(),
                    "--linger",
                    "0");
            assertEquals(2, tokenPublisher.exit(WAIT));
            assertTrue(tokenPublisher.stderr().contains("a consumer token cannot publish"), tokenPublisher.stderr());
            try (RawPeer forger = new RawPeer("127.0.0.1", port, 10_000)) {
                Handshake.Refused refused = assertThrows(
                        Handshake.Refused.class, () -> forger.handshake("embedded", Optional.empty(), Role.PRODUCER));
                assertTrue(refused.getMessage().contains("requires credentials"), refused.getMessage());
            }
            System.out.println("fault: with credentials on: a consumer token's publish exits 2 (a consumer token cannot"
                    + " publish); a forger without the secret gets no further than the challenge");

            fleet.consumesExactly(
                    a, v, "--notifier", notifier, "--set", "viper.auth.secret.file=" + secrets.consumer());
            assertEquals(
                    v,
                    latest(notifier, "m", ViperConfig.of(secrets.consumerSetting()))
                            .version(),
                    "nothing forged was announced");
            System.out.println("fault: with credentials on: a consumer with the token holds v" + v + " byte-identical");
        }
    }

    private static boolean isEmpty(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.findAny().isEmpty();
        }
    }
}
