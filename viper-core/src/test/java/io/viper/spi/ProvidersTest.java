package io.viper.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.testing.FakeGpuProvider;
import org.junit.jupiter.api.Test;

/** Provider lookup over the test doubles registered in viper-core's test resources. */
class ProvidersTest {
    @Test
    void providersAreLoadedOnceAndShared() {
        assertSame(
                Providers.transport("mem").orElseThrow(),
                Providers.transport("MEM").orElseThrow());
        assertSame(Providers.notifier("mem"), Providers.notifier("mem"));
        assertSame(Providers.gpu().orElseThrow(), Providers.gpu().orElseThrow());
        assertSame(Providers.transports(), Providers.transports());
    }

    @Test
    void availabilityIsAskedOnEveryCall() {
        try {
            FakeGpuProvider.disable();
            assertTrue(Providers.gpu().orElseThrow().unavailableReason().isPresent());
            FakeGpuProvider.enable(1 << 20);
            assertEquals("fake", Providers.gpu().orElseThrow().name());
            assertTrue(
                    Providers.gpu().orElseThrow().unavailableReason().isEmpty(),
                    "the cached provider reports the new state");
        } finally {
            FakeGpuProvider.disable();
        }
    }

    @Test
    void transportsAreOrderedByTierThenPriorityAndCannotBeChanged() {
        var all = Providers.transports();
        for (int i = 1; i < all.size(); i++) {
            TransportProvider a = all.get(i - 1);
            TransportProvider b = all.get(i);
            assertTrue(
                    a.tier().compareTo(b.tier()) < 0 || (a.tier() == b.tier() && a.priority() <= b.priority()),
                    a.scheme() + " before " + b.scheme());
        }
        assertThrows(UnsupportedOperationException.class, () -> all.remove(0));
    }

    @Test
    void unknownSchemesAreRefusedNamingTheInstalledOnes() {
        assertTrue(Providers.transport("nope").isEmpty());
        ViperConfigException e = assertThrows(ViperConfigException.class, () -> Providers.notifier("nope"));
        assertTrue(e.getMessage().contains("mem://"), e.getMessage());
        assertThrows(ViperConfigException.class, () -> Providers.repository("nope"));
    }
}
