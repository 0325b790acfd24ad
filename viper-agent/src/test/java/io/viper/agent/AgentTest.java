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
import io.viper.tensor.TensorInfo;
import io.viper.testing.TestSecrets;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.StandardProtocolFamily;
import java.net.URI;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Agents in this JVM, driven over their sockets by {@link TestClient}: a model published through one
 * agent and leased through another, and every kind of bad input, each refused or cleaned up with
 * one log line while the agent keeps serving its other clients.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AgentTest {
    @TempDir
    Path dir;
    private Path shm;
    private AgentLog log;
    private final List<AutoCloseable> open = new ArrayList<>();

    @BeforeEach
    void setUp() throws IOException {
        shm = Files.createDirectory(dir.resolve("shm"));
        log = new AgentLog();
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
        log.close();
    }

    private <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    /** An agent hosting the embedded broker, serving on tcp://. */
    private ViperAgent producerAgent() {
        return keep(ViperAgent.start(dir.resolve("p.sock"), shm,
                Viper.builder().notifier("embedded://127.0.0.1:0").transports("tcp://127.0.0.1:0")));
    }

    /** A second agent following the first one's broker; {@code settings} are more configuration. */
    private ViperAgent consumerAgent(ViperAgent producer, String... settings) {
        Viper.Builder b = Viper.builder().notifier(producer.notifierUri()).consumerPaths("tcp");
        for (int i = 0; i < settings.length; i += 2) {
            b.config(settings[i], settings[i + 1]);
        }
        return keep(ViperAgent.start(dir.resolve("c.sock"), shm, b));
    }

    private TestClient client(ViperAgent agent, String role, String model) throws IOException {
        TestClient c = keep(TestClient.connect(agent.socket()));
        ObjectNode hello = c.hello(role, model);
        assertTrue(hello.get("ok").asBoolean(), hello.toString());
        return c;
    }

    private static Map<String, byte[]> tensors(long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        Map<String, byte[]> t = new LinkedHashMap<>();
        for (String name : List.of("layer0.weight", "layer0.bias", "head.weight")) {
            byte[] b = new byte[100 + rnd.nextInt(5000)];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) rnd.nextInt();
            }
            t.put(name, b);
        }
        return t;
    }

    private static ObjectNode publish(TestClient producer, Map<String, byte[]> tensors) throws IOException {
        ObjectNode r = producer.publish(tensors, () -> { });
        assertTrue(r.get("ok").asBoolean(), r.toString());
        return r;
    }

    /** Checks that {@code lease} points to a safetensors image holding exactly {@code expected}. */
    private static SafetensorsHeader assertHolds(ObjectNode lease, Map<String, byte[]> expected) throws IOException {
        assertTrue(lease.get("ok").asBoolean(), lease.toString());
        byte[] image = TestClient.leasedImage(lease);
        MemorySegment m = MemorySegment.ofArray(image);
        SafetensorsHeader h = SafetensorsHeader.parse("lease", m);
        assertEquals(new ArrayList<>(expected.keySet()), h.tensors().stream().map(TensorInfo::name).toList());
        for (TensorInfo t : h.tensors()) {
            byte[] got = m.asSlice(h.dataStart() + t.offset(), t.length()).toArray(ValueLayout.JAVA_BYTE);
            assertArrayEquals(expected.get(t.name()), got, t.name());
        }
        return h;
    }

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
        consumer.send(TestClient.JSON.createObjectNode().put("op", "release").put("lease", lease.get("lease").asLong()));

        Map<String, byte[]> v2 = tensors(2);
        publish(producer, v2);
        assertEquals(2, consumer.awaitVersion(2));
        assertHolds(consumer.request("lease"), v2);
        assertEquals(2, producer.request("flush").get("version").asLong());
        assertEquals(List.of(), log.all(), "nothing to warn about");
    }

    @Test
    void aClientOfAnotherUserIsRefusedWithOneLogLine() throws Exception {
        java.nio.file.attribute.UserPrincipal someoneElse = () -> "someone-else";
        ViperAgent p = keep(ViperAgent.start(dir.resolve("p.sock"), shm,
                Viper.builder().notifier("embedded://127.0.0.1:0").transports("tcp://127.0.0.1:0"), someoneElse));
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
        ViperAgent p = keep(ViperAgent.start(dir.resolve("p.sock"), shm, Viper.builder().notifier("embedded://127.0.0.1:0")
                .transports("tcp://127.0.0.1:0").config("viper.auth.secret.file", secrets.producer().toString())));
        TestClient producer = client(p, "producer", "m");
        Map<String, byte[]> v1 = tensors(5);
        publish(producer, v1);

        ViperAgent c = consumerAgent(p, "viper.auth.secret.file", secrets.consumer().toString());
        TestClient consumer = client(c, "consumer", "m");
        consumer.awaitVersion(1);
        assertHolds(consumer.request("lease"), v1);

        // Without credentials the agent's consumer is refused by the broker, for good: it never learns of v1, and its
        // clients are told why rather than seeing NOT_FOUND until they give up.
        ViperAgent stranger = keep(ViperAgent.start(dir.resolve("s.sock"), shm,
                Viper.builder().notifier(p.notifierUri()).consumerPaths("tcp")));
        TestClient outsider = client(stranger, "consumer", "m");
        String why = "this agent cannot follow model m: notifier " + p.notifierUri() + ": " + p.notifierUri()
                + " requires credentials: set viper.auth.secret.file";
        assertEquals(List.of(why + " (serving v0; its clients are told)"), log.await("cannot follow"), log.all().toString());
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
        ViperAgent p = keep(ViperAgent.start(dir.resolve("p.sock"), shm, Viper.builder().notifier("embedded://127.0.0.1:0")
                .transports("tcp://127.0.0.1:0").config("viper.auth.secret.file", secrets.producer().toString())));
        Map<String, byte[]> v1 = tensors(7);
        publish(client(p, "producer", "m"), v1);
        TestClient consumer = client(consumerAgent(p, "viper.auth.secret.file", secrets.consumer().toString()), "consumer", "m");
        consumer.awaitVersion(1);

        // v2 is announced where the agent's secret is good, but only a producer of another deployment holds it
        TestSecrets others = TestSecrets.make(Files.createDirectory(dir.resolve("others")));
        Viper elsewhere = keep(Viper.builder().notifier("embedded://127.0.0.1:0").transports("tcp://127.0.0.1:0")
                .config("viper.auth.secret.file", others.producer().toString()).config("viper.producer.inline.bytes", "0").build());
        ViperProducer theirs = keep(elsewhere.producer("m", CheckpointPolicy.never()));
        Snapshot snapshot = sink -> sink.addFloats("w", new long[] {2}, new float[] {1, 2});
        theirs.publish(snapshot, Map.of());
        Manifest v2 = theirs.publish(snapshot, Map.of()).announced().get(20, TimeUnit.SECONDS);
        keep(Providers.notifier("embedded").open(p.notifierUri(), NotifierProvider.Role.PRODUCER, ViperConfig.of(secrets.producerSetting())))
                .publish(v2);

        URI at = v2.locations().getFirst().uri();
        ObjectNode told = consumer.event();
        while (told.get("event").asText().equals("update")) {
            told = consumer.event();
        }
        assertEquals("failure", told.get("event").asText(), told.toString());
        assertEquals("this agent cannot follow model m: tcp read of m v2 from " + at + ": " + at + " refused this client: authentication failed",
                told.get("message").asText());
        assertHolds(consumer.request("lease"), v1);
    }

    @Test
    void garbageIsRefusedWithOneLogLineWhileTheAgentServesOthers() throws Exception {
        ViperAgent p = producerAgent();
        TestClient good = client(p, "producer", "m");
        TestClient bad = keep(TestClient.connect(p.socket()));
        bad.sendRaw("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        ObjectNode refusal = bad.read();
        assertEquals("FORMAT", refusal.get("reason").asText(), refusal.toString());
        assertTrue(refusal.get("message").asText().contains("frame length 1195725856 is outside"), refusal.toString());
        assertTrue(bad.closedByAgent());
        assertEquals(1, log.await("frame length").size(), log.all().toString());

        assertTrue(good.request("ping").get("ok").asBoolean());
        assertEquals(1, publish(good, tensors(3)).get("version").asLong());
    }

    @Test
    void aTruncatedFrameIsRefusedWithOneLogLineWhileTheAgentServesOthers() throws Exception {
        ViperAgent p = producerAgent();
        TestClient good = client(p, "producer", "m");
        TestClient bad = keep(TestClient.connect(p.socket()));
        bad.sendRaw(ByteBuffer.allocate(14).putInt(100).put("{\"op\":\"ping\"".getBytes(StandardCharsets.UTF_8), 0, 10).array());
        bad.close();
        List<String> lines = log.await("truncated frame");
        assertEquals(1, lines.size(), log.all().toString());
        assertTrue(lines.getFirst().contains("closed after 10 of 100 bytes"), lines.getFirst());
        assertEquals(1, publish(good, tensors(4)).get("version").asLong());
    }

    @Test
    void aBadRequestInAGoodFrameGetsAnErrorReplyAndTheConnectionGoesOn() throws Exception {
        ViperAgent p = producerAgent();
        TestClient c = keep(TestClient.connect(p.socket()));
        ObjectNode early = c.request("alloc", "bytes", 1000);
        assertEquals("CONFIG", early.get("reason").asText());
        assertTrue(early.get("message").asText().contains("say hello first"), early.toString());
        assertTrue(c.hello("producer", "m").get("ok").asBoolean());
        ObjectNode typed = c.request("alloc", "bytes", "lots");
        assertEquals("FORMAT", typed.get("reason").asText());
        assertTrue(typed.get("message").asText().contains("alloc: field \"bytes\" must be an integer, got string \"lots\""), typed.toString());
        ObjectNode unknown = c.request("lease");
        assertEquals("FORMAT", unknown.get("reason").asText());
        assertTrue(unknown.get("message").asText().contains("unknown operation 'lease' for a producer"), unknown.toString());
        ObjectNode missing = c.request("publish", "slot", 99, "bytes", 10);
        assertEquals("NOT_FOUND", missing.get("reason").asText(), missing.toString());
        assertTrue(c.request("ping").get("ok").asBoolean(), "the connection is still open");
        assertEquals(2, log.matching("refused").size(), "one line per malformed request: " + log.all());
    }

    @Test
    void malformedChangesAreRefusedNamingTheTensorAndGoodOnesPublish() throws Exception {
        ViperAgent p = producerAgent();
        Map<String, byte[]> tensors = Map.of("w", new byte[100]);
        String[][] bad = {
            {"[1, 2]", "field \"changes\" must be an object"},
            {"{\"x\": []}", "changes name tensor 'x', which the slot's image does not hold"},
            {"{\"w\": [1]}", "changes of 'w' must be an array of start, end pairs"},
            {"{\"w\": [90, 101]}", "changes of 'w': [90, 101) is not a range of its 100 bytes"},
            {"{\"w\": [5, 4]}", "changes of 'w': [5, 4) is not a range of its 100 bytes"},
            {"{\"w\": [\"0\", 4]}", "changes of 'w': [\"0\", 4) is not a range of its 100 bytes"},
        };
        for (int i = 0; i < bad.length; i++) {
            String[] b = bad[i];
            // a client per case: each refused publish keeps the slot it filled
            ObjectNode r = client(p, "producer", "m" + i).publish(tensors, () -> { }, "changes", TestClient.JSON.readTree(b[0]));
            assertEquals("FORMAT", r.path("reason").asText(), b[0] + ": " + r);
            assertTrue(r.get("message").asText().contains(b[1]), r.toString());
        }
        TestClient c = client(p, "producer", "m");
        ObjectNode good = c.publish(tensors, () -> { }, "changes", TestClient.JSON.readTree("{\"w\": [0, 4, 50, 60]}"));
        assertEquals(1, good.get("version").asLong(), good.toString());
        // After a refused publish the next one publishes (its changes unused: they are relative to the refused one).
        assertEquals("FORMAT", c.publish(tensors, () -> { }, "changes", TestClient.JSON.readTree("{\"x\": []}")).path("reason").asText());
        ObjectNode next = c.publish(Map.of("w", new byte[100]), () -> { }, "changes", TestClient.JSON.readTree("{\"w\": []}"));
        assertEquals(2, next.get("version").asLong(), "the refused publish took no version: " + next);
    }

    /**
     * A publish's changes are relative to the client's last publish; when the agent refused that one
     * before the producer saw it, they miss its changes, so the agent compares instead: on a recycled
     * staging buffer the changed tensor is found and copied, the other found unchanged.
     */
    @Test
    void afterARefusedPublishTheNextOnesChangesAreNotTrusted() throws Exception {
        ViperAgent p = producerAgent();
        TestClient c = client(p, "producer", "m");
        com.fasterxml.jackson.databind.JsonNode nothing = TestClient.JSON.readTree("{\"w\": [], \"z\": []}");
        com.fasterxml.jackson.databind.JsonNode wChanged = TestClient.JSON.readTree("{\"w\": [0, 100], \"z\": [], \"x\": []}");
        byte[] z = new byte[100];
        ObjectNode next = null;
        for (int round = 1; round <= 40; round++) {
            byte[] w = new byte[100];
            java.util.Arrays.fill(w, (byte) round);
            Map<String, byte[]> tensors = new java.util.LinkedHashMap<>();
            tensors.put("w", w);
            tensors.put("z", z);
            // Declares w's change but is refused (it names a tensor the image lacks): the producer never sees it.
            assertEquals("FORMAT", c.publish(tensors, () -> { }, "changes", wChanged).path("reason").asText());
            c.request("free", "slot", c.lastSlot());
            // Relative to the refused one, nothing changed; relative to what the producer staged, w did.
            next = c.publish(tensors, () -> { }, "changes", nothing);
            assertTrue(next.path("ok").asBoolean(), next.toString());
            c.request("free", "slot", c.lastSlot());
            if (next.get("unchanged_bytes").asLong() > 0) {
                break;
            }
            Thread.sleep(50); // the producer recycles a staging buffer once an older version's withdrawal is done
        }
        assertEquals(100, next.get("copied_bytes").asLong(), "w was found changed by comparing: " + next);
        assertEquals(100, next.get("unchanged_bytes").asLong(), next.toString());
    }

    @Test
    void aSlotThatIsNotASafetensorsImageIsRefused() throws Exception {
        ViperAgent p = producerAgent();
        TestClient c = client(p, "producer", "m");
        ObjectNode slot = c.request("alloc", "bytes", 64);
        Files.write(Path.of(slot.get("path").asText()), new byte[64]); // a header length of 0
        ObjectNode r = c.request("publish", "slot", slot.get("slot").asLong(), "bytes", 64);
        assertEquals("FORMAT", r.get("reason").asText(), r.toString());
        assertEquals(1, log.matching("slot " + slot.get("slot").asLong()).size(), log.all().toString());
        assertEquals(1, publish(c, tensors(5)).get("version").asLong(), "the next good slot publishes");
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
        dying.close();
        List<String> lines = log.await("went away holding");
        assertEquals(1, lines.size(), log.all().toString());
        assertTrue(lines.getFirst().contains("went away holding 1 lease(s) on m (versions [1]); released them"), lines.getFirst());

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
            try (Stream<Path> files = Files.list(shm)) {
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
        assertEquals(1, log.matching("was deleted under the agent").size(), log.all().toString());

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
        assertEquals(1, log.matching("was deleted under the agent").size(), log.all().toString());
    }

    @Test
    void aClientOfAnotherProtocolVersionIsRefusedNamingBoth() throws Exception {
        ViperAgent p = producerAgent();
        TestClient c = keep(TestClient.connect(p.socket()));
        ObjectNode r = c.request(TestClient.JSON.createObjectNode().put("op", "hello").put("protocol", 2).put("role", "consumer").put("model", "m"));
        assertEquals("CONFIG", r.get("reason").asText());
        assertTrue(r.get("message").asText().contains("protocol 2 is not spoken by this agent, which speaks protocol 1"), r.toString());
        assertTrue(c.closedByAgent());
    }

    @Test
    void oneModelHasOneProducerClientAtATimeAndItsVersionsContinue() throws Exception {
        ViperAgent p = producerAgent();
        TestClient first = client(p, "producer", "m");
        publish(first, tensors(1));
        TestClient second = keep(TestClient.connect(p.socket()));
        ObjectNode refused = second.hello("producer", "m");
        assertEquals("CONFIG", refused.get("reason").asText());
        assertTrue(refused.get("message").asText().contains("model m already has a producer on this agent"), refused.toString());
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
        ViperAgent a = ViperAgent.start(socket, shm, Viper.builder().notifier("embedded://127.0.0.1:0").transports("tcp://127.0.0.1:0"));
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
            ViperConfigException e = assertThrows(ViperConfigException.class, () -> ViperAgent.start(socket, shm, Viper.builder()));
            assertEquals("another agent is listening on " + socket + " (stop it, or give this one another --socket)", e.getMessage());
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
        ViperConfigException notSocket = assertThrows(ViperConfigException.class, () -> ViperAgent.start(socket, shm, Viper.builder()));
        assertEquals(socket + " exists and is not a socket (give the agent another --socket)", notSocket.getMessage());
        assertArrayEquals(new byte[] {1}, Files.readAllBytes(socket), "a file that is not a socket is left alone");
    }
}
