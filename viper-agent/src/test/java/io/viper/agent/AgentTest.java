package io.viper.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.CheckpointPolicy;
import io.viper.Snapshot;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.errors.ViperConfigException;
import io.viper.format.SafetensorsHeader;
import io.viper.manifest.Manifest;
import io.viper.spi.NotifierProvider;
import io.viper.spi.Providers;
import io.viper.testing.TestSecrets;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Agents in this JVM, driven over their sockets by {@link TestClient}: a model published through one agent and leased
 * through another, security, clients that die or come late, files deleted under the agent. Bad input is in
 * {@link AgentBadInputTest}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AgentTest extends AgentTestBase {
    @Test
    void aModelPublishedThroughOneAgentIsLeasedInPlaceThroughAnother() throws Exception {
        ViperAgent p = producerAgent();
        TestClient producer = client(p, "producer", "m");
        Map<String, byte[]> v1 = tensors(1);
        ObjectNode published = publish(producer, v1);
        assertEquals(1, published.get("version").asLong());
        assertFalse(published.get("slot_retired").asBoolean());

        ViperAgent c = consumerAgent(p);
        TestClient consumer = client(c, "consumer", "m");
        consumer.awaitVersion(1);
        ObjectNode lease = consumer.request("lease");
        assertEquals(1, lease.get("version").asLong());
        assertTrue(lease.get("path").asText().endsWith("-model"), "read in place from the receive buffer: " + lease);
        SafetensorsHeader h = assertHolds(lease, v1);
        assertEquals("10", h.metadata().get("viper.iteration"));
        assertEquals("0.5", h.metadata().get("viper.loss"));
        assertEquals("test", h.metadata().get("source"), "the client's own metadata travels too");
        consumer.send(TestClient.JSON
                .createObjectNode()
                .put("op", "release")
                .put("lease", lease.get("lease").asLong()));

        Map<String, byte[]> v2 = tensors(2);
        publish(producer, v2);
        assertEquals(2, consumer.awaitVersion(2));
        assertHolds(consumer.request("lease"), v2);
        assertEquals(2, producer.request("flush").get("version").asLong());
        assertEquals(List.of(), log.all(), "nothing to warn about");
    }

    @Test
    void aClientOfAnotherUserIsRefusedWithOneLogLine() throws Exception {
        UserPrincipal someoneElse = () -> "someone-else";
        ViperAgent p = keep(ViperAgent.start(
                dir.resolve("p.sock"),
                shm,
                Viper.builder().notifier("embedded://127.0.0.1:0").transports("tcp://127.0.0.1:0"),
                someoneElse));
        TestClient stranger = keep(TestClient.connect(p.socket()));
        assertTrue(stranger.closedByAgent());
        List<String> lines = log.await("refused a client");
        assertEquals(1, lines.size(), log.all().toString());
        assertTrue(lines.getFirst().contains("the agent only serves someone-else"), lines.getFirst());
        assertTrue(lines.getFirst().contains("runs as user " + System.getProperty("user.name")), lines.getFirst());
    }

    @Test
    void agentsJoinASecuredDeploymentWithTheirCredentialsAndNotWithout() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        ViperAgent p = keep(ViperAgent.start(
                dir.resolve("p.sock"),
                shm,
                Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .transports("tcp://127.0.0.1:0")
                        .config("viper.auth.secret.file", secrets.producer().toString())));
        TestClient producer = client(p, "producer", "m");
        Map<String, byte[]> v1 = tensors(5);
        publish(producer, v1);

        ViperAgent c =
                consumerAgent(p, "viper.auth.secret.file", secrets.consumer().toString());
        TestClient consumer = client(c, "consumer", "m");
        consumer.awaitVersion(1);
        assertHolds(consumer.request("lease"), v1);

        // Without credentials the agent's consumer is refused by the broker, for good: it never learns of v1, and its
        // clients are told why rather than seeing NOT_FOUND until they give up.
        ViperAgent stranger = keep(ViperAgent.start(
                dir.resolve("s.sock"),
                shm,
                Viper.builder()
                        .notifier(p.notifierUri())
                        .consumerPaths("tcp")
                        .config("viper.auth.user.secret", "off")));
        TestClient outsider = client(stranger, "consumer", "m");
        String why = "this agent cannot follow model m: notifier " + p.notifierUri() + ": " + p.notifierUri()
                + " requires credentials: set viper.auth.secret.file";
        assertEquals(
                List.of(why + " (serving v0; its clients are told)"),
                log.await("cannot follow"),
                log.all().toString());
        ObjectNode told = outsider.event();
        assertEquals("failure", told.get("event").asText(), told.toString());
        assertEquals("m", told.get("model").asText());
        assertEquals("CONFIG", told.get("reason").asText());
        assertEquals(why, told.get("message").asText());
        ObjectNode refused = outsider.request("lease");
        assertEquals("CONFIG", refused.get("reason").asText(), refused.toString());
        assertEquals(why, refused.get("message").asText());
        TestClient late = client(stranger, "consumer", "m");
        assertEquals(why, late.event().get("message").asText(), "a client that joins later is told too");
    }

    @Test
    void anAgentWhoseConsumerAProducerRefusesKeepsServingItsVersionAndSaysWhy() throws Exception {
        TestSecrets secrets = TestSecrets.make(dir);
        ViperAgent p = keep(ViperAgent.start(
                dir.resolve("p.sock"),
                shm,
                Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .transports("tcp://127.0.0.1:0")
                        .config("viper.auth.secret.file", secrets.producer().toString())));
        Map<String, byte[]> v1 = tensors(7);
        publish(client(p, "producer", "m"), v1);
        TestClient consumer = client(
                consumerAgent(p, "viper.auth.secret.file", secrets.consumer().toString()), "consumer", "m");
        consumer.awaitVersion(1);

        // v2 is announced where the agent's secret is good, but only a producer of another deployment holds it
        TestSecrets others = TestSecrets.make(Files.createDirectory(dir.resolve("others")));
        Viper elsewhere = keep(Viper.builder()
                .notifier("embedded://127.0.0.1:0")
                .transports("tcp://127.0.0.1:0")
                .config("viper.auth.secret.file", others.producer().toString())
                .config("viper.producer.inline.bytes", "0")
                .build());
        ViperProducer theirs = keep(elsewhere.producer("m", CheckpointPolicy.never()));
        Snapshot snapshot = sink -> sink.addFloats("w", new long[] {2}, new float[] {1, 2});
        theirs.publish(snapshot, Map.of());
        Manifest v2 = theirs.publish(snapshot, Map.of()).announced().get(20, TimeUnit.SECONDS);
        keep(Providers.notifier("embedded")
                        .open(
                                p.notifierUri(),
                                NotifierProvider.Role.PRODUCER,
                                ViperConfig.of(secrets.producerSetting())))
                .publish(v2);

        URI at = v2.locations().getFirst().uri();
        ObjectNode told = consumer.event();
        while (told.get("event").asText().equals("update")) {
            told = consumer.event();
        }
        assertEquals("failure", told.get("event").asText(), told.toString());
        assertEquals(
                "this agent cannot follow model m: tcp read of m v2 from " + at + ": " + at
                        + " refused this client: authentication failed",
                told.get("message").asText());
        assertHolds(consumer.request("lease"), v1);
    }

    @Test
    void aClientThatJoinsAfterAVersionArrivedIsToldItByTheHello() throws Exception {
        ViperAgent p = producerAgent();
        TestClient producer = client(p, "producer", "m");
        Map<String, byte[]> v1 = tensors(1);
        publish(producer, v1);
        ViperAgent c = consumerAgent(p);
        TestClient first = client(c, "consumer", "m");
        first.awaitVersion(1);
        // No update event will come for version 1 now: the reply names it, as for a client that
        // joins while a version is swapped in (after the update's listeners ran).
        TestClient late = keep(TestClient.connect(c.socket()));
        ObjectNode hello = late.hello("consumer", "m");
        assertEquals(1, hello.get("version").asLong(), hello.toString());
        assertHolds(late.request("lease"), v1);
    }

    @Test
    void aClientThatDiesHoldingALeaseHasItReleased() throws Exception {
        ViperAgent p = producerAgent();
        TestClient producer = client(p, "producer", "m");
        publish(producer, tensors(1));
        // Were the lease kept, the consumer would wait this long for its buffer, well past the test's timeout.
        ViperAgent c = consumerAgent(p, "viper.consumer.buffer.wait.ms", "600000");
        TestClient watcher = client(c, "consumer", "m");
        TestClient dying = client(c, "consumer", "m");
        dying.awaitVersion(1);
        assertTrue(dying.request("lease").get("ok").asBoolean());
        try (AgentLog infos = AgentLog.fromInfo()) {
            dying.close(); // an inference server that exits: expected, so INFO, not a warning
            List<String> lines = infos.await("went away holding");
            assertEquals(1, lines.size(), infos.all().toString());
            assertTrue(
                    lines.getFirst().contains("went away holding 1 lease(s) on m (versions [1]); released them"),
                    lines.getFirst());
            assertEquals("INFO", infos.levelOf("went away holding"));
        }
        assertEquals(List.of(), log.matching("went away holding"), "no warning");

        Map<String, byte[]> v3 = tensors(3);
        publish(producer, tensors(2));
        watcher.awaitVersion(2);
        publish(producer, v3);
        watcher.awaitVersion(3); // needs the buffer version 1 was leased in
        assertHolds(watcher.request("lease"), v3);
    }

    @Test
    void aSlotFileDeletedUnderTheAgentIsPublishedFromItsMappingThenRetired() throws Exception {
        ViperAgent p = producerAgent();
        TestClient producer = client(p, "producer", "m");
        Map<String, byte[]> v1 = tensors(1);
        List<Path> slots = new ArrayList<>();
        ObjectNode r = producer.publish(v1, () -> {
            try (Stream<Path> files = Files.walk(shm)) {
                files.filter(f -> f.toString().endsWith("-slot")).forEach(slots::add);
                for (Path f : slots) {
                    Files.delete(f);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        assertEquals(1, slots.size());
        assertTrue(r.get("ok").asBoolean(), r.toString());
        assertTrue(r.get("slot_retired").asBoolean());
        assertEquals(
                1, log.matching("was deleted under the agent").size(), log.all().toString());

        ViperAgent c = consumerAgent(p);
        TestClient consumer = client(c, "consumer", "m");
        consumer.awaitVersion(1);
        assertHolds(consumer.request("lease"), v1);
    }

    @Test
    void aReceiveFileDeletedUnderTheAgentIsServedAsCopies() throws Exception {
        ViperAgent p = producerAgent();
        TestClient producer = client(p, "producer", "m");
        Map<String, byte[]> v1 = tensors(1);
        publish(producer, v1);
        ViperAgent c = consumerAgent(p);
        TestClient consumer = client(c, "consumer", "m");
        consumer.awaitVersion(1);
        ObjectNode inPlace = consumer.request("lease");
        assertHolds(inPlace, v1);
        Files.delete(Path.of(inPlace.get("path").asText()));

        ObjectNode copy = consumer.request("lease");
        assertTrue(copy.get("path").asText().endsWith("-copy"), copy.toString());
        assertHolds(copy, v1);
        assertEquals(copy.get("path"), consumer.request("lease").get("path"), "one copy per version");
        assertEquals(
                1, log.matching("was deleted under the agent").size(), log.all().toString());
    }

    @Test
    void oneModelHasOneProducerClientAtATimeAndItsVersionsContinue() throws Exception {
        ViperAgent p = producerAgent();
        TestClient first = client(p, "producer", "m");
        publish(first, tensors(1));
        TestClient second = keep(TestClient.connect(p.socket()));
        ObjectNode refused = second.hello("producer", "m");
        assertEquals("CONFIG", refused.get("reason").asText());
        assertTrue(
                refused.get("message").asText().contains("model m already has a producer on this agent"),
                refused.toString());
        first.close();
        ObjectNode hello = null;
        for (int i = 0; i < 100 && (hello == null || !hello.get("ok").asBoolean()); i++) {
            TestClient again = keep(TestClient.connect(p.socket()));
            hello = again.hello("producer", "m"); // the agent notices the first client's end on its own thread
            if (!hello.get("ok").asBoolean()) {
                Thread.sleep(20);
            }
        }
        assertEquals(1, hello.get("version").asLong(), "the producer stayed open: " + hello);
    }

    @Test
    void theSocketIsOwnerOnlyAndTheAgentLeavesNoFileBehind() throws Exception {
        Path socket = dir.resolve("run").resolve("viper").resolve("agent.sock");
        ViperAgent a = ViperAgent.start(
                socket, shm, Viper.builder().notifier("embedded://127.0.0.1:0").transports("tcp://127.0.0.1:0"));
        try {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket)));
            assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socket.getParent())));
            try (TestClient c = TestClient.connect(socket)) {
                assertTrue(c.hello("producer", "m").get("ok").asBoolean());
                publish(c, tensors(1));
                assertTrue(c.request("alloc", "bytes", 4096).get("ok").asBoolean());
            }
        } finally {
            a.close();
        }
        assertFalse(Files.exists(socket));
        try (Stream<Path> left = Files.list(shm)) {
            assertEquals(List.of(), left.toList());
        }
    }

    @Test
    void aSecondAgentOnALiveSocketIsRefusedAndADeadOnesSocketAndFilesAreCleanedUp() throws Exception {
        Path socket = dir.resolve("a.sock");
        try (ViperAgent first = ViperAgent.start(socket, shm, Viper.builder())) {
            ViperConfigException e =
                    assertThrows(ViperConfigException.class, () -> ViperAgent.start(socket, shm, Viper.builder()));
            assertEquals(
                    "another agent is listening on " + socket + " (stop it, or give this one another --socket)",
                    e.getMessage());
        }
        // What a killed agent leaves: its socket file and its shared-memory files.
        try (ServerSocketChannel dead = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            dead.bind(UnixDomainSocketAddress.of(socket));
        }
        long deadPid = ProcessHandle.current().pid() + 4_000_000; // above Linux's largest pid
        Path stale = Files.write(shm.resolve("viper-agent-" + deadPid + "-1-slot"), new byte[16]);
        Path other = Files.write(shm.resolve("not-viper"), new byte[16]);
        try (ViperAgent again = ViperAgent.start(socket, shm, Viper.builder())) {
            assertTrue(Files.exists(socket));
            assertFalse(Files.exists(stale));
            assertTrue(Files.exists(other), "only the agent's own files are touched");
        }
        Files.write(socket, new byte[] {1});
        ViperConfigException notSocket =
                assertThrows(ViperConfigException.class, () -> ViperAgent.start(socket, shm, Viper.builder()));
        assertEquals(socket + " exists and is not a socket (give the agent another --socket)", notSocket.getMessage());
        assertArrayEquals(new byte[] {1}, Files.readAllBytes(socket), "a file that is not a socket is left alone");
    }
}
