package io.viper.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.viper.Viper;
import org.junit.jupiter.api.Test;

/** The agent's gauges (issue 38, item 7): clients connected, producer slots open, shared-memory bytes. */
class AgentMetricsTest extends AgentTestBase {
    @Test
    void gaugesFollowClientsSlotsAndSharedMemory() throws Exception {
        SimpleMeterRegistry r = new SimpleMeterRegistry();
        ViperAgent agent = ViperAgent.start(
                dir.resolve("m.sock"),
                shm,
                Viper.builder()
                        .notifier("embedded://127.0.0.1:0")
                        .transports("tcp://127.0.0.1:0")
                        .meterRegistry(r));
        try {
            assertEquals(0, r.get("viper.agent.clients").gauge().value());
            assertEquals(0, r.get("viper.agent.slots").gauge().value());
            assertEquals(0, r.get("viper.agent.shared.memory").gauge().value());
            TestClient c = client(agent, "producer", "m");
            assertTrue(c.request("alloc", "bytes", 4096).get("ok").asBoolean());
            assertTrue(c.request("alloc", "bytes", 8192).get("ok").asBoolean());
            assertEquals(1, r.get("viper.agent.clients").gauge().value());
            assertEquals(2, r.get("viper.agent.slots").gauge().value());
            assertEquals(4096 + 8192, r.get("viper.agent.shared.memory").gauge().value());
            c.close();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (r.get("viper.agent.clients").gauge().value() > 0 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertEquals(0, r.get("viper.agent.clients").gauge().value(), "the client left");
            assertEquals(0, r.get("viper.agent.slots").gauge().value(), "its slots were freed");
        } finally {
            agent.close();
        }
        assertNull(r.find("viper.agent.clients").gauge(), "a closed agent's gauges are removed");
    }
}
