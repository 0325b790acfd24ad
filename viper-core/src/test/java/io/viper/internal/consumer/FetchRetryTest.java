package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperException.Reason;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;

/** The fetch thread's retry: the backoff's jitter (from an injected random), the line for a producer that is gone. */
class FetchRetryTest {
    @Test
    void theBackoffIsSpreadOverItsUpperHalfAndNeverBeyond() {
        RandomGenerator random = new SplittableRandom(42);
        Set<Long> delays = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            long d = FetchRetry.jittered(1000, random);
            assertTrue(d >= 500 && d <= 1000, "delay " + d);
            delays.add(d);
        }
        assertTrue(delays.size() > 100, "consumers retrying together draw different delays: " + delays.size());
        // The bounds themselves: a generator at its lowest and at its highest draw.
        assertEquals(500, FetchRetry.jittered(1000, lowest()));
        assertEquals(1000, FetchRetry.jittered(1000, highest()));
        assertEquals(15_000, FetchRetry.jittered(30_000, lowest()));
        assertEquals(1, FetchRetry.jittered(1, highest()));
    }

    @Test
    void aRefusedConnectionIsFoundAmongTheCauses() {
        IOException refused = new ConnectException("Connection refused");
        assertTrue(FetchRetry.refusedConnection(ViperException.of(Reason.UNAVAILABLE, "tcp: cannot connect", refused)));
        assertTrue(FetchRetry.refusedConnection(new RetriableViperException(Reason.TRANSFER, "Connection refused")));
        assertFalse(FetchRetry.refusedConnection(new RetriableViperException(Reason.TIMEOUT, "tcp read: timed out")));
    }

    @Test
    void aVersionWhoseEveryLocationRefusedIsNamedAsAnnouncedByAProducerThatIsGone() {
        assertEquals(
                "version 7 of m was announced by a producer that is gone "
                        + "(connection refused at tcp://h:1, ucx://h:2); no PFS copy (a producer with a PFS leaves its "
                        + "versions there when it exits)",
                FetchRetry.gone(
                        manifest(List.of(host("tcp://h:1"), host("ucx://h:2"))), List.of("tcp://h:1", "ucx://h:2")));
        Location file = new Location(URI.create("file:///pfs/m/7/model.safetensors"), Tier.PFS);
        assertTrue(FetchRetry.gone(manifest(List.of(host("tcp://h:1"), file)), List.of("tcp://h:1"))
                .endsWith("; its PFS copy is not readable by this consumer (give it the producer's PFS)"));
    }

    private static Location host(String uri) {
        return new Location(URI.create(uri), Tier.HOST);
    }

    private static Manifest manifest(List<Location> locations) {
        return new Manifest(
                "m",
                7,
                "p",
                0,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(new TensorInfo("w", DType.U8, new long[] {4}, 0, 4), new ContentHash(1, 2))),
                locations);
    }

    private static RandomGenerator lowest() {
        return () -> 0L;
    }

    /** Draws the top of every bounded range. */
    private static RandomGenerator highest() {
        return new RandomGenerator() {
            @Override
            public long nextLong() {
                return -1L;
            }

            @Override
            public long nextLong(long bound) {
                return bound - 1;
            }
        };
    }
}
