package io.viper.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.Viper;
import io.viper.format.SafetensorsHeader;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/**
 * What {@link AgentTest} and {@link AgentBadInputTest} share: agents in this JVM under a temporary directory, the
 * clients and agents a test opened (closed after it, newest first), and the agent log.
 */
abstract class AgentTestBase {
    @TempDir
    Path dir;

    Path shm;
    AgentLog log;
    final List<AutoCloseable> open = new ArrayList<>();

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

    <T extends AutoCloseable> T keep(T c) {
        open.add(c);
        return c;
    }

    /** An agent hosting the embedded broker, serving on tcp://. */
    ViperAgent producerAgent() {
        return keep(ViperAgent.start(
                dir.resolve("p.sock"),
                shm,
                Viper.builder().notifier("embedded://127.0.0.1:0").transports("tcp://127.0.0.1:0")));
    }

    /** A second agent following the first one's broker; {@code settings} are more configuration. */
    ViperAgent consumerAgent(ViperAgent producer, String... settings) {
        Viper.Builder b = Viper.builder().notifier(producer.notifierUri()).consumerPaths("tcp");
        for (int i = 0; i < settings.length; i += 2) {
            b.config(settings[i], settings[i + 1]);
        }
        return keep(ViperAgent.start(dir.resolve("c.sock"), shm, b));
    }

    TestClient client(ViperAgent agent, String role, String model) throws IOException {
        TestClient c = keep(TestClient.connect(agent.socket()));
        ObjectNode hello = c.hello(role, model);
        assertTrue(hello.get("ok").asBoolean(), hello.toString());
        return c;
    }

    static Map<String, byte[]> tensors(long seed) {
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

    static ObjectNode publish(TestClient producer, Map<String, byte[]> tensors) throws IOException {
        ObjectNode r = producer.publish(tensors, () -> {});
        assertTrue(r.get("ok").asBoolean(), r.toString());
        return r;
    }

    /** Checks that {@code lease} points to a safetensors image holding exactly {@code expected}. */
    static SafetensorsHeader assertHolds(ObjectNode lease, Map<String, byte[]> expected) throws IOException {
        assertTrue(lease.get("ok").asBoolean(), lease.toString());
        byte[] image = TestClient.leasedImage(lease);
        MemorySegment m = MemorySegment.ofArray(image);
        SafetensorsHeader h = SafetensorsHeader.parse("lease", m);
        assertEquals(
                new ArrayList<>(expected.keySet()),
                h.tensors().stream().map(TensorInfo::name).toList());
        for (TensorInfo t : h.tensors()) {
            byte[] got = m.asSlice(h.dataStart() + t.offset(), t.length()).toArray(ValueLayout.JAVA_BYTE);
            assertArrayEquals(expected.get(t.name()), got, t.name());
        }
        return h;
    }
}
