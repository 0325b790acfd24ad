package io.viper.net;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

class HostPortTest {
    @Test
    void parsesHostAndPort() {
        assertEquals(new HostPort("127.0.0.1", 7000), HostPort.parse(URI.create("tcp://127.0.0.1:7000"), "tcp", false));
        assertEquals(
                new HostPort("node-3.cluster", 1), HostPort.parse(URI.create("UCX://node-3.cluster:1"), "ucx", false));
        assertEquals(new HostPort("::1", 0), HostPort.parse(URI.create("embedded://[::1]:0"), "embedded", true));
    }

    @Test
    void refusesEverythingButSchemeHostPortInOneLineQuotingTheUri() {
        for (String bad : List.of(
                "tcp://127.0.0.1:0",
                "ucx://127.0.0.1",
                "ucx://127.0.0.1:70000",
                "ucx://127.0.0.1:1/",
                "ucx://127.0.0.1:1/path",
                "ucx://user@127.0.0.1:1",
                "ucx:opaque",
                "ucx://127.0.0.1:1?x=1",
                "ucx://127.0.0.1:1#f",
                "ucx:///just/a/path",
                "ucx://127.0.0.1:0")) {
            ViperConfigException e =
                    assertThrows(ViperConfigException.class, () -> HostPort.parse(URI.create(bad), "ucx", false), bad);
            assertTrue(e.getMessage().startsWith("'" + bad + "' "), e.getMessage());
            assertTrue(e.getMessage().endsWith("(expected ucx://host:port)"), e.getMessage());
            assertFalse(e.getMessage().contains("\n"), e.getMessage());
        }
        ViperConfigException missing =
                assertThrows(ViperConfigException.class, () -> HostPort.parse(null, "tcp", true));
        assertEquals("tcp:// URI is missing (expected tcp://host:port; port 0 picks a free one)", missing.getMessage());
        assertEquals(
                "'tcp://h:70000' has port 70000 out of range 0-65535 (expected tcp://host:port; port 0 picks a free"
                        + " one)",
                assertThrows(ViperConfigException.class, () -> HostPort.parse(URI.create("tcp://h:70000"), "tcp", true))
                        .getMessage());
    }

    @Test
    void anAuthorityUriCannotParseNamesThePartAtFault() {
        // 'embedded://127.0.0.1:-1' has no host: URI finds no host when the port is malformed
        for (String[] c : new String[][] {
            {"embedded://127.0.0.1:-1", "has port -1 out of range 0-65535"},
            {"embedded://127.0.0.1:x1", "has port 'x1', which is not a number"},
            {"embedded://bad_host:7800", "has no valid host name ('bad_host')"},
            {"embedded://bad_host", "has no valid host name ('bad_host')"},
            {"embedded://:7800", "has no host"},
        }) {
            ViperConfigException e = assertThrows(
                    ViperConfigException.class, () -> HostPort.parse(URI.create(c[0]), "embedded", true), c[0]);
            assertEquals(
                    "'" + c[0] + "' " + c[1] + " (expected embedded://host:port; port 0 picks a free one)",
                    e.getMessage());
        }
        assertEquals(
                "'tcp://h:-1' has port -1 out of range 1-65535 (expected tcp://host:port)",
                assertThrows(ViperConfigException.class, () -> HostPort.parse(URI.create("tcp://h:-1"), "tcp", false))
                        .getMessage());
    }

    @Test
    void resolvesFormsUrisAndAdvertisesWildcardsAsThisHost() {
        HostPort loop = HostPort.parse(URI.create("tcp://127.0.0.1:0"), "tcp", true);
        InetSocketAddress a = loop.resolve();
        assertFalse(a.isUnresolved());
        assertTrue(loop.unresolved().isUnresolved());
        assertEquals(URI.create("tcp://127.0.0.1:5"), loop.withPort(5).uri("tcp"));
        assertEquals(URI.create("cuda-ipc://[::1]:9"), new HostPort("::1", 9).uri("cuda-ipc"));
        assertEquals("[::1]:9", new HostPort("::1", 9).toString());
        assertEquals(loop, loop.advertised(), "a concrete host stays as given");
        assertFalse(new HostPort("0.0.0.0", 5).advertised().host().equals("0.0.0.0"));
        ViperConfigException unknown =
                assertThrows(ViperConfigException.class, () -> new HostPort("no-such-host.invalid", 1).resolve());
        assertTrue(unknown.getMessage().contains("no-such-host.invalid"), unknown.getMessage());
    }
}
