package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperMemoryException;
import io.viper.internal.memory.MemoryBudget;
import io.viper.spi.ReceiveAllocator;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The two receive buffers of a consumer: budget, claiming, and freeing on close. */
class ReceiveSlotsTest {
    @Test
    void freeBytesIsTheBudgetLessTheBuffersHoldingAModel() {
        try (ReceiveSlots slots = new ReceiveSlots("m", 1000, 10)) {
            assertEquals(1000, slots.freeBytes());
            ReceiveSlots.Slot a = slots.claim();
            a.segment(300);
            assertEquals(700, slots.freeBytes());
            ReceiveSlots.Slot b = slots.claim();
            b.segment(200);
            assertEquals(500, slots.freeBytes());
            a.release();
            assertEquals(800, slots.freeBytes(), "a released buffer is reused or replaced: it does not count");
            b.release();
        }
    }

    @Test
    void aThirdClaimGetsTheBufferReleasedMeanwhile() throws Exception {
        try (ReceiveSlots slots = new ReceiveSlots("m", 1000, 30_000)) {
            ReceiveSlots.Slot a = slots.claim();
            ReceiveSlots.Slot b = slots.claim();
            assertNotSame(a, b);
            CompletableFuture<ReceiveSlots.Slot> third = CompletableFuture.supplyAsync(slots::claim);
            b.release();
            assertSame(b, third.get(20, TimeUnit.SECONDS));
        }
    }

    @Test
    void whenBothStayHeldTheClaimTimesOut() {
        try (ReceiveSlots slots = new ReceiveSlots("m", 1000, 10)) {
            slots.claim();
            slots.claim();
            RetriableViperException e = assertThrows(RetriableViperException.class, slots::claim);
            assertEquals(ViperException.Reason.TIMEOUT, e.reason());
        }
    }

    @Test
    void closeFreesAFreeBufferAtOnceAndAClaimedOneOnRelease() {
        ReceiveSlots slots = new ReceiveSlots("m", 1000, 10);
        ReceiveSlots.Slot a = slots.claim();
        MemorySegment held = a.segment(64);
        ReceiveSlots.Slot b = slots.claim();
        MemorySegment free = b.segment(64);
        b.release();
        slots.close();
        assertThrows(IllegalStateException.class, () -> free.get(ValueLayout.JAVA_BYTE, 0), "freed on close");
        held.set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
        a.release();
        assertThrows(
                IllegalStateException.class, () -> held.get(ValueLayout.JAVA_BYTE, 0), "freed on release after close");
    }

    @Test
    void aBufferGrowsWhenTheNextVersionIsLarger() {
        try (ReceiveSlots slots = new ReceiveSlots("m", 1 << 20, 10)) {
            ReceiveSlots.Slot a = slots.claim();
            MemorySegment small = a.segment(16);
            MemorySegment large = a.segment(4096);
            assertEquals(4096, large.byteSize());
            assertThrows(
                    IllegalStateException.class,
                    () -> small.get(ValueLayout.JAVA_BYTE, 0),
                    "the smaller buffer was freed");
            a.release();
        }
    }

    @Test
    void buffersComeFromTheAllocatorAndGoBackWhenReplacedOrClosed() {
        List<Long> allocated = new ArrayList<>();
        List<Long> closed = new ArrayList<>();
        ReceiveAllocator counting = bytes -> {
            ReceiveAllocator.Buffer b = ReceiveAllocator.offHeap().allocate(bytes);
            allocated.add(bytes);
            return new ReceiveAllocator.Buffer() {
                @Override
                public MemorySegment segment() {
                    return b.segment();
                }

                @Override
                public void close() {
                    closed.add(bytes);
                    b.close();
                }
            };
        };
        ReceiveSlots slots = new ReceiveSlots("m", 1 << 20, 10, counting);
        ReceiveSlots.Slot a = slots.claim();
        a.segment(16);
        a.segment(8);
        assertEquals(List.of(16L), allocated, "a buffer large enough is reused");
        a.segment(4096);
        assertEquals(List.of(16L, 4096L), allocated);
        assertEquals(List.of(16L), closed, "the smaller buffer went back to the allocator");
        a.release();
        slots.close();
        assertEquals(List.of(16L, 4096L), closed);
    }

    @Test
    void twoConsumersShareTheInstancesBudget() {
        MemoryBudget instance =
                MemoryBudget.root("host memory of this Viper instance", "viper.memory.host.budget.bytes", 1000);
        try (ReceiveSlots a = new ReceiveSlots(
                        "a",
                        instance.child("consumer a", "viper.consumer.host.budget.bytes", 800),
                        10,
                        ReceiveAllocator.offHeap());
                ReceiveSlots b = new ReceiveSlots(
                        "b",
                        instance.child("consumer b", "viper.consumer.host.budget.bytes", 800),
                        10,
                        ReceiveAllocator.offHeap())) {
            ReceiveSlots.Slot sa = a.claim();
            sa.segment(700);
            assertEquals(100, a.freeBytes(), "a's own budget leaves 100");
            assertEquals(300, b.freeBytes(), "what a holds is not b's to take");
            ReceiveSlots.Slot sb = b.claim();
            ViperMemoryException e = assertThrows(ViperMemoryException.class, () -> sb.segment(400));
            assertTrue(
                    e.getMessage().startsWith("consumer b asked for 400 bytes (receive buffer 0 of b)"),
                    e.getMessage());
            assertTrue(
                    e.getMessage().endsWith("held: consumer a: 700 bytes [receive buffer 0 of a (700 bytes)]"),
                    e.getMessage());
            assertEquals(300, sb.segment(300).byteSize(), "what is left is b's");
            assertEquals(1000, instance.held());
            sa.release();
            sb.release();
        }
        assertEquals(0, instance.held(), "closing the consumers gave everything back");
    }
}
