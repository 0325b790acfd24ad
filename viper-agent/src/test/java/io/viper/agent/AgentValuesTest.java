package io.viper.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.Viper;
import io.viper.format.SafetensorsHeader;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Values inside a good frame that the agent can name: a non-finite loss (a diverging or overflowing step, as the bare
 * {@code NaN} Python's json writes or as the protocol's string) publishes like any other, and a bad value in a field
 * gets an error reply for that request alone while the connection goes on. (Beside {@link AgentTest}, which is over the
 * project's file length.)
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AgentValuesTest {
    @TempDir
    Path dir;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) {
            open.get(i).close();
        }
    }

    @Test
    void aNonFiniteLossPublishesAndABadValueIsRefusedWithTheConnectionKept() throws Exception {
        AgentLog log = keep(new AgentLog());
        Path shm = Files.createDirectory(dir.resolve("shm"));
        ViperAgent p = keep(ViperAgent.start(
                dir.resolve("p.sock"),
                shm,
                Viper.builder().notifier("embedded://127.0.0.1:0").transports("tcp://127.0.0.1:0")));
        TestClient producer = client(p, "producer"); // its producer starts the broker the second agent follows
        ViperAgent c = keep(ViperAgent.start(
                dir.resolve("c.sock"),
                shm,
                Viper.builder().notifier(p.notifierUri()).consumerPaths("tcp")));
        TestClient consumer = client(c, "consumer");
        Map<String, byte[]> w = Map.of("w", new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
        assertTrue(producer.publish(w, () -> {}).get("ok").asBoolean());
        long slot = producer.lastSlot();
        String image = "\"slot\":" + slot + ",\"bytes\":" + producer.lastBytes();

        // The slot still holds the image: each request publishes it again, with another loss.
        String[] sent = {"NaN", "Infinity", "-Infinity", "\"NaN\"", "\"Infinity\"", "\"-Infinity\"", "0.25"};
        String[] written = {"NaN", "Infinity", "-Infinity", "NaN", "Infinity", "-Infinity", "0.25"};
        for (int i = 0; i < sent.length; i++) {
            long iteration = 11L + i;
            ObjectNode r = producer.requestRaw(
                    "{\"op\":\"publish\"," + image + ",\"iteration\":" + iteration + ",\"loss\":" + sent[i] + "}");
            assertTrue(r.path("ok").asBoolean(), sent[i] + ": " + r);
            assertEquals(2 + i, r.get("version").asLong(), r.toString());
            consumer.awaitVersion(2 + i);
            ObjectNode lease = consumer.request("lease");
            assertEquals(2 + i, lease.get("version").asLong(), lease.toString());
            SafetensorsHeader h = holds(lease, w.get("w"));
            assertEquals(written[i], h.metadata().get("viper.loss"), sent[i]);
            assertEquals(Long.toString(iteration), h.metadata().get("viper.iteration"));
            consumer.send(TestClient.JSON
                    .createObjectNode()
                    .put("op", "release")
                    .put("lease", lease.get("lease").asLong()));
        }

        String[][] bad = {
            {
                "{\"op\":\"publish\",\"slot\":NaN,\"bytes\":8}",
                "publish: field \"slot\" must be an integer, got number NaN"
            },
            {"{\"op\":\"alloc\",\"bytes\":Infinity}", "alloc: field \"bytes\" must be an integer, got number Infinity"},
            {
                "{\"op\":\"publish\"," + image + ",\"loss\":\"nan\"}",
                "publish: field \"loss\" must be a number (or \"NaN\", \"Infinity\", \"-Infinity\"), "
                        + "got string \"nan\""
            },
        };
        for (String[] b : bad) {
            ObjectNode r = producer.requestRaw(b[0]);
            assertEquals("FORMAT", r.path("reason").asText(), b[0] + ": " + r);
            assertTrue(r.get("message").asText().contains(b[1]), r.toString());
        }
        assertEquals(bad.length, log.matching("refused").size(), "one line per bad value: " + log.all());
        assertTrue(producer.request("ping").get("ok").asBoolean(), "the connection is still open");
        assertTrue(producer.publish(w, () -> {}).get("ok").asBoolean(), "and publishes");
        assertEquals(2 + sent.length, consumer.awaitVersion(2 + sent.length));
    }

    private <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    private TestClient client(ViperAgent agent, String role) throws Exception {
        TestClient c = keep(TestClient.connect(agent.socket()));
        ObjectNode hello = c.hello(role, "m");
        assertTrue(hello.get("ok").asBoolean(), hello.toString());
        return c;
    }

    /** The leased image's header, after checking that it holds one tensor {@code w} of these bytes. */
    private static SafetensorsHeader holds(ObjectNode lease, byte[] expected) throws Exception {
        MemorySegment m = MemorySegment.ofArray(TestClient.leasedImage(lease));
        SafetensorsHeader h = SafetensorsHeader.parse("lease", m);
        TensorInfo t = h.tensors().getFirst();
        assertEquals(List.of("w"), h.tensors().stream().map(TensorInfo::name).toList());
        assertArrayEquals(
                expected, m.asSlice(h.dataStart() + t.offset(), t.length()).toArray(ValueLayout.JAVA_BYTE));
        return h;
    }
}
