package io.viper.internal.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperMemoryException;
import io.viper.testing.LogCapture;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The budget tree: limits, a child's reservations counted in its parent, release, refusals and close naming holders.
 */
class MemoryBudgetTest {
    private static final String KEY = "viper.memory.host.budget.bytes";

    @Test
    void aChildsReservationsCountAgainstItsParentAndComeBackOnClose() {
        MemoryBudget root = MemoryBudget.root("host memory", KEY, 1000);
        MemoryBudget a = root.child("producer a", "viper.producer.staging.budget.bytes", 800);
        MemoryBudget b = root.child("consumer b", "viper.consumer.host.budget.bytes", 800);
        MemoryBudget.Reservation ra = a.reserve(600, () -> "staged a v1");
        assertEquals(600, a.held());
        assertEquals(600, root.held());
        assertEquals(200, a.headroom(), "a's own limit leaves 200");
        assertEquals(400, b.headroom(), "b's own limit leaves 800, the instance only 400");
        assertNull(b.tryReserve(401, () -> "receive buffer 0 of b"), "the instance has 400 left");
        MemoryBudget.Reservation rb = b.reserve(400, () -> "receive buffer 0 of b");
        assertEquals(1000, root.held());
        assertEquals(0, a.headroom());
        ra.close();
        ra.close(); // idempotent
        assertEquals(0, a.held());
        assertEquals(400, root.held());
        assertEquals(600, a.headroom(), "the room a gave back is the instance's again");
        rb.close();
        assertEquals(0, root.held());
    }

    @Test
    void aChildIsHeldToItsOwnLimitWhateverItsParentHasLeft() {
        MemoryBudget root = MemoryBudget.root("host memory", KEY, 1 << 30);
        MemoryBudget a = root.child("producer a", "viper.producer.staging.budget.bytes", 100);
        assertNotNull(a.tryReserve(100, () -> "x"));
        ViperMemoryException e = assertThrows(ViperMemoryException.class, () -> a.reserve(1, () -> "y"));
        assertTrue(
                e.getMessage().contains("its own budget (viper.producer.staging.budget.bytes = 100 bytes)"),
                e.getMessage());
        assertEquals(100, a.ceiling());
        assertSame(a, a.tightest());
        MemoryBudget small = MemoryBudget.root("host", KEY, 50).child("c", "k", 100);
        assertEquals(50, small.ceiling(), "the smallest limit on the way to the root");
        assertEquals(KEY, small.tightest().limitKey());
    }

    @Test
    void aRefusalNamesWhoAskedForHowMuchAndWhoHoldsWhat() {
        MemoryBudget root = MemoryBudget.root("host memory of this Viper instance", KEY, 3 << 20);
        MemoryBudget a = root.child("producer a", "viper.producer.staging.budget.bytes", 4L << 30);
        MemoryBudget b = root.child("producer b", "viper.producer.staging.budget.bytes", 4L << 30);
        a.reserve(2 << 20, () -> "staged a v1 (2097152 bytes)");
        a.reserve(512 << 10, () -> "staged a v2 (524288 bytes)");
        ViperMemoryException e =
                assertThrows(ViperMemoryException.class, () -> b.reserve(1 << 20, () -> "staging for v1"));
        assertEquals(1 << 20, e.requestedBytes());
        assertEquals(ViperException.Reason.UNAVAILABLE, e.reason());
        assertTrue(e.reason().isRetriable(), "room comes back as buffers are freed");
        assertEquals(
                "producer b asked for 1.0 MiB (1048576 bytes) (staging for v1) but host memory of this Viper instance"
                        + " (viper.memory.host.budget.bytes = 3.0 MiB (3145728 bytes)) has 512.0 KiB (524288 bytes)"
                        + " left;"
                        + " held: producer a: 2.5 MiB (2621440 bytes) [staged a v1 (2097152 bytes), staged a v2"
                        + " (524288 bytes)]",
                e.getMessage());
        assertEquals(0, b.held(), "a refusal reserves nothing");
    }

    @Test
    void closeNamesWhatIsStillHeldWhichKeepsCountingUntilReleased() {
        MemoryBudget root = MemoryBudget.root("host memory", KEY, 1000);
        MemoryBudget c = root.child("consumer m", "viper.consumer.host.budget.bytes", 1000);
        MemoryBudget.Reservation leased = c.reserve(300, () -> "receive buffer 1 of m");
        try (LogCapture log = new LogCapture(MemoryBudget.class.getName())) {
            c.close();
            List<String> lines = log.formattedLines();
            assertEquals(1, lines.size(), lines.toString());
            assertEquals(
                    "consumer m closed while it holds 300 bytes: consumer m (closed): 300 bytes"
                            + " [receive buffer 1 of m]",
                    lines.getFirst());
        }
        assertThrows(ViperClosedException.class, () -> c.reserve(1, () -> "z"), "a closed budget grants nothing");
        assertThrows(ViperClosedException.class, () -> c.child("x", "k", 1));
        assertEquals(300, root.held(), "still counted in the instance's budget");
        assertEquals("consumer m (closed): 300 bytes [receive buffer 1 of m]", root.describeHeld());
        leased.close();
        assertEquals(0, root.held());
        assertEquals("nothing", root.describeHeld());
        try (LogCapture log = new LogCapture(MemoryBudget.class.getName())) {
            root.close();
            assertEquals(List.of(), log.lines(), "nothing held: nothing to say");
        }
    }

    @Test
    void aRootClosedWithChildrenHoldingMemoryNamesEach() {
        MemoryBudget root = MemoryBudget.root("host memory of this Viper instance", KEY, 1 << 20);
        root.child("producer a", "k", 1 << 20).reserve(100, () -> "staged a v3 (100 bytes)");
        root.child("consumer b", "k", 1 << 20).reserve(200, () -> "receive buffer 0 of b (200 bytes)");
        try (LogCapture log = new LogCapture(MemoryBudget.class.getName())) {
            root.close();
            assertEquals(
                    List.of("host memory of this Viper instance closed while it holds 300 bytes: producer a: 100 bytes"
                            + " [staged a v3 (100 bytes)]; consumer b: 200 bytes [receive buffer 0 of b (200 bytes)]"),
                    log.formattedLines());
        }
    }

    @Test
    void negativeSizesAreBugs() {
        MemoryBudget root = MemoryBudget.root("host", KEY, 10);
        assertThrows(IllegalArgumentException.class, () -> root.tryReserve(-1, () -> "x"));
        assertThrows(IllegalArgumentException.class, () -> MemoryBudget.root("host", KEY, -1));
        assertEquals("0 bytes", MemoryBudget.size(0));
        assertEquals("1023 bytes", MemoryBudget.size(1023));
        assertEquals("1.0 GiB (1073741824 bytes)", MemoryBudget.size(1L << 30));
    }
}
