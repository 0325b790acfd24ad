package io.viper.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.viper.TransferPath;
import java.util.Locale;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** {@code viper demo --transport} takes the names of {@link TransferPath}, the bench's and the cost model's. */
class DemoTransportTest {
    @Test
    void eachTransportIsNamedByItsPathAndItsAliases() {
        for (DemoTransport t : DemoTransport.values()) {
            assertEquals(t.path().displayName(), t.displayName());
            assertEquals(Optional.of(t), DemoTransport.byName(t.path().displayName()));
            for (String alias : t.path().aliases()) {
                assertEquals(Optional.of(t), DemoTransport.byName(alias.toUpperCase(Locale.ROOT)));
            }
        }
        // the demo's earlier names
        assertEquals(Optional.of(DemoTransport.HOST), DemoTransport.byName("ucx"));
        assertEquals(Optional.of(DemoTransport.PFS), DemoTransport.byName(" file "));
    }

    @Test
    void aPathTheDemoDoesNotRunAndAnUnknownNameAreNotTransports() {
        assertEquals(Optional.empty(), DemoTransport.byName("gpu"));
        assertEquals(Optional.empty(), DemoTransport.byName("carrier-pigeon"));
        assertEquals("inline, host (or ucx), tcp, pfs (or file)", DemoTransport.names());
    }

    @Test
    void theCostLineIsThePaths() {
        assertEquals("host", DemoTransport.INLINE.path().costLine());
        assertEquals("host", DemoTransport.HOST.path().costLine());
        assertEquals("pfs", DemoTransport.PFS.path().costLine());
    }
}
