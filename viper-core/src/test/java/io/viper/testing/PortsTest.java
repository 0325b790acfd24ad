package io.viper.testing;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PortsTest {
    @Test
    void aRunIsBelowTheEphemeralRangeAndEveryPortOfItBinds() throws Exception {
        int first = Ports.freeRun(3);
        assertTrue(first >= 10_000 && first + 2 < Ports.ephemeralLow(), "run at " + first);
        try (ServerSocket a = new ServerSocket(first);
                ServerSocket b = new ServerSocket(first + 1);
                ServerSocket c = new ServerSocket(first + 2)) {
            assertTrue(a.isBound() && b.isBound() && c.isBound());
        }
    }

    @Test
    void aPortHeldByAListenerIsNotHandedOut() throws Exception {
        try (ServerSocket held = new ServerSocket(Ports.free())) {
            for (int i = 0; i < 200; i++) {
                int p = Ports.free();
                assertTrue(p != held.getLocalPort(), "handed out the held port " + p);
            }
        }
    }

    @Test
    void portsAskedForOneAfterAnotherDiffer() {
        Set<Integer> seen = new HashSet<>();
        for (int i = 0; i < 300; i++) {
            int first = Ports.freeRun(3);
            for (int p = first; p < first + 3; p++) {
                assertTrue(seen.add(p), "port " + p + " handed out twice");
            }
        }
    }

    @Test
    void aRunOfNoPortsIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> Ports.freeRun(0));
    }
}
