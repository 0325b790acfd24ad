package io.viper.internal.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.spi.ReadLease;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A staging buffer moves only through legal transitions, and only under its cache's lock. */
class StagingBufferStatesTest {

    @Test
    void aBufferGoesFromFillingToStagedToRetiringAndIsWithdrawnOnceItsLastLeaseCloses() {
        List<StagingBuffer> withdrawn = new ArrayList<>();
        try (StagingCache cache = new StagingCache("m", 1 << 20, 1, 1_000, withdrawn::add, null)) {
            StagingBuffer v1 = cache.acquire(1, 64, c -> true).buffer();
            assertNull(v1.tryLease(), "no lease while FILLING");
            assertEquals(List.of(), cache.activate(v1, null));
            ReadLease lease = v1.tryLease();
            assertTrue(lease != null, "a lease while STAGED");
            StagingBuffer v2 = cache.acquire(2, 64, c -> true).buffer();
            assertEquals(List.of(), cache.activate(v2, null), "v1 retires but a lease holds it: not withdrawn yet");
            assertNull(v1.tryLease(), "no new lease while RETIRING");
            assertEquals(List.of(), withdrawn);
            lease.close();
            assertEquals(List.of(v1), withdrawn, "withdrawn once its last lease closed");
            lease.close();
            assertEquals(List.of(v1), withdrawn, "a lease closed twice counts once");
            v1.retireHandled();
            assertSame(v1, cache.acquire(3, 64, c -> true).buffer(), "withdrawn and without leases, it is reused");
        }
    }

    @Test
    void anIllegalTransitionIsRefused() {
        try (StagingCache cache = new StagingCache("m", 1 << 20, 2, 1_000, b -> {}, null)) {
            StagingBuffer b = cache.acquire(1, 64, c -> true).buffer();
            cache.activate(b, null);
            IllegalStateException twice = assertThrows(IllegalStateException.class, () -> cache.activate(b, null));
            assertEquals("cannot activate staged m v1 (64 bytes) while STAGED", twice.getMessage());
        }
    }

    @Test
    void aTransitionOutsideTheCachesLockIsRefused() {
        try (StagingCache cache = new StagingCache("m", 1 << 20, 2, 1_000, b -> {}, null)) {
            StagingBuffer b = cache.acquire(1, 64, c -> true).buffer();
            assertThrows(IllegalStateException.class, () -> b.activate(null));
            assertThrows(IllegalStateException.class, b::state);
        }
    }
}
