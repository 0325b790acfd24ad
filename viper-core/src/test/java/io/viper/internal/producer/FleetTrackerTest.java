package io.viper.internal.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Who the producer's tracker sends each reader to: a chain, a tree, the producer as last resort, no cycles. */
class FleetTrackerTest {
    private final List<String> dropped = new ArrayList<>();

    private static List<URI> relay(int node) {
        return List.of(URI.create("tcp://10.0.0." + node + ":7000"));
    }

    private FleetTracker tracker(int k) {
        return new FleetTracker(k, (model, uri) -> dropped.add(model + " " + uri));
    }

    @Test
    void oneReaderPerSourceMakesAChainInTheOrderOfArrival() {
        FleetTracker t = tracker(1);
        assertEquals(List.of(), t.assign("m", 1, relay(1), List.of()), "the first reads from the producer");
        assertEquals(relay(1), t.assign("m", 1, relay(2), List.of()));
        assertEquals(relay(2), t.assign("m", 1, relay(3), List.of()));
        assertEquals(relay(3), t.assign("m", 1, relay(4), List.of()));
    }

    @Test
    void twoReadersPerSourceMakeATreeBreadthFirst() {
        FleetTracker t = tracker(2);
        assertEquals(List.of(), t.assign("m", 1, relay(1), List.of()));
        assertEquals(List.of(), t.assign("m", 1, relay(2), List.of()));
        assertEquals(relay(1), t.assign("m", 1, relay(3), List.of()));
        assertEquals(relay(1), t.assign("m", 1, relay(4), List.of()));
        assertEquals(relay(2), t.assign("m", 1, relay(5), List.of()));
    }

    @Test
    void whenEverySourceIsFullARelayTakesOneMoreNotTheProducer() {
        FleetTracker t = tracker(1);
        t.assign("m", 1, relay(1), List.of());
        t.assign("m", 1, relay(2), List.of());
        assertEquals(relay(2), t.assign("m", 1, List.of(), List.of()), "relay 2 had room for a reader");
        // Now every source has its reader: a late joiner goes to a relay, not to the producer.
        assertEquals(relay(1), t.assign("m", 1, List.of(), List.of()));
    }

    @Test
    void aFailedRelayIsDroppedAndItsReaderGetsASourceThatCameBeforeIt() {
        FleetTracker t = tracker(1);
        t.assign("m", 1, relay(1), List.of());
        t.assign("m", 1, relay(2), List.of());
        t.assign("m", 1, relay(3), List.of());
        // Relay 2 died: its reader (3) asks again. Only the producer and relay 1 came before 3.
        List<URI> next = t.assign("m", 1, relay(3), relay(2));
        assertEquals(relay(1), next, "relay 1 takes one more reader before the producer does");
        assertEquals(List.of("m " + relay(2).getFirst()), dropped);
        // A new reader is never sent to the dropped relay.
        assertEquals(relay(3), t.assign("m", 1, relay(4), List.of()));
    }

    @Test
    void versionsAreTrackedApartAndOnlyTheNewestFewKept() {
        FleetTracker t = tracker(1);
        assertEquals(List.of(), t.assign("m", 1, relay(1), List.of()));
        assertEquals(List.of(), t.assign("m", 2, relay(1), List.of()), "another version starts a new chain");
        assertEquals(List.of(), t.assign("other", 1, relay(1), List.of()), "another model too");
        for (long v = 3; v <= 2 + FleetTracker.VERSIONS_KEPT; v++) {
            t.assign("m", v, relay(1), List.of());
        }
        assertEquals(List.of(), t.assign("m", 1, relay(9), List.of()), "a version no longer kept: the producer");
    }
}
