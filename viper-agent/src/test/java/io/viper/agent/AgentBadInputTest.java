package io.viper.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Every kind of bad input to an agent, each refused with one log line while the agent keeps serving its other clients.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AgentBadInputTest extends AgentTestBase {
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
        bad.sendRaw(ByteBuffer.allocate(14)
                .putInt(100)
                .put("{\"op\":\"ping\"".getBytes(StandardCharsets.UTF_8), 0, 10)
                .array());
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
        assertTrue(
                typed.get("message")
                        .asText()
                        .contains("alloc: field \"bytes\" must be an integer, got string \"lots\""),
                typed.toString());
        ObjectNode unknown = c.request("lease");
        assertEquals("FORMAT", unknown.get("reason").asText());
        assertTrue(
                unknown.get("message").asText().contains("unknown operation 'lease' for a producer"),
                unknown.toString());
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
            ObjectNode r = client(p, "producer", "m" + i)
                    .publish(tensors, () -> {}, "changes", TestClient.JSON.readTree(b[0]));
            assertEquals("FORMAT", r.path("reason").asText(), b[0] + ": " + r);
            assertTrue(r.get("message").asText().contains(b[1]), r.toString());
        }
        TestClient c = client(p, "producer", "m");
        ObjectNode good = c.publish(tensors, () -> {}, "changes", TestClient.JSON.readTree("{\"w\": [0, 4, 50, 60]}"));
        assertEquals(1, good.get("version").asLong(), good.toString());
        // After a refused publish the next one publishes (its changes unused: they are relative to the refused one).
        assertEquals(
                "FORMAT",
                c.publish(tensors, () -> {}, "changes", TestClient.JSON.readTree("{\"x\": []}"))
                        .path("reason")
                        .asText());
        ObjectNode next =
                c.publish(Map.of("w", new byte[100]), () -> {}, "changes", TestClient.JSON.readTree("{\"w\": []}"));
        assertEquals(2, next.get("version").asLong(), "the refused publish took no version: " + next);
    }

    /**
     * A publish's changes are relative to the client's last publish; when the agent refused that one before the
     * producer saw it, they miss its changes, so the agent compares instead: on a recycled staging buffer the changed
     * tensor is found and copied, the other found unchanged.
     */
    @Test
    void afterARefusedPublishTheNextOnesChangesAreNotTrusted() throws Exception {
        ViperAgent p = producerAgent();
        TestClient c = client(p, "producer", "m");
        com.fasterxml.jackson.databind.JsonNode nothing = TestClient.JSON.readTree("{\"w\": [], \"z\": []}");
        com.fasterxml.jackson.databind.JsonNode wChanged =
                TestClient.JSON.readTree("{\"w\": [0, 100], \"z\": [], \"x\": []}");
        byte[] z = new byte[100];
        ObjectNode next = null;
        for (int round = 1; round <= 40; round++) {
            byte[] w = new byte[100];
            Arrays.fill(w, (byte) round);
            Map<String, byte[]> tensors = new LinkedHashMap<>();
            tensors.put("w", w);
            tensors.put("z", z);
            // Declares w's change but is refused (it names a tensor the image lacks): the producer never sees it.
            assertEquals(
                    "FORMAT",
                    c.publish(tensors, () -> {}, "changes", wChanged)
                            .path("reason")
                            .asText());
            c.request("free", "slot", c.lastSlot());
            // Relative to the refused one, nothing changed; relative to what the producer staged, w did.
            next = c.publish(tensors, () -> {}, "changes", nothing);
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
        assertEquals(
                1,
                log.matching("slot " + slot.get("slot").asLong()).size(),
                log.all().toString());
        assertEquals(1, publish(c, tensors(5)).get("version").asLong(), "the next good slot publishes");
    }

    @Test
    void aClientOfAnotherProtocolVersionIsRefusedNamingBoth() throws Exception {
        ViperAgent p = producerAgent();
        TestClient c = keep(TestClient.connect(p.socket()));
        ObjectNode r = c.request(TestClient.JSON
                .createObjectNode()
                .put("op", "hello")
                .put("protocol", 2)
                .put("role", "consumer")
                .put("model", "m"));
        assertEquals("CONFIG", r.get("reason").asText());
        assertTrue(
                r.get("message").asText().contains("protocol 2 is not spoken by this agent, which speaks protocol 1"),
                r.toString());
        assertTrue(c.closedByAgent());
    }
}
