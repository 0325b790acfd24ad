package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import io.viper.testing.LogCapture;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Which manifests become the fetch thread's target: newer versions only, or the same one with more locations. */
class ManifestTrackerTest {
    private static final Location TCP = new Location(URI.create("tcp://h:1"), Tier.HOST);
    private static final Location PFS = new Location(URI.create("file:///pfs/m/1/model.safetensors"), Tier.PFS);

    private static Manifest manifest(long version, Location... locations) {
        return new Manifest(
                "m",
                version,
                "p",
                0,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(new TensorInfo("w", DType.U8, new long[] {4}, 0, 4), new ContentHash(1, 2))),
                List.of(locations));
    }

    @Test
    void theNewestVersionIsTheTargetAndOlderOnesAreIgnored() throws Exception {
        AtomicLong serving = new AtomicLong();
        try (ManifestTracker t = new ManifestTracker("m", true, serving::get)) {
            t.offer(manifest(2, TCP));
            t.offer(manifest(1, TCP));
            assertEquals(2, t.awaitTarget().version());
            serving.set(2);
            t.offer(manifest(3, TCP));
            t.offer(manifest(2, TCP, PFS));
            assertEquals(3, t.awaitTarget().version(), "a version already serving is no target");
            assertEquals(List.of(TCP, PFS), t.find(2).orElseThrow().locations(), "locations of one version are merged");
        }
    }

    @Test
    void versionsAnnouncedAfterOneAreCountedNotSubtracted() {
        long clock = 1_700_000_000_000L; // a CLI producer's first version is the clock
        try (ManifestTracker t = new ManifestTracker("m", false, () -> 0)) {
            assertEquals(0, t.announcedAfter(0));
            t.offer(manifest(clock, TCP));
            t.offer(manifest(clock + 1, TCP));
            t.offer(manifest(clock + 1, PFS)); // the same version again: no new announcement
            assertEquals(2, t.announcedAfter(0), "two versions behind before the first loaded");
            assertEquals(1, t.announcedAfter(clock));
            assertEquals(0, t.announcedAfter(clock + 1));
        }
    }

    @Test
    void theSameVersionWithMoreLocationsIsATargetAgain() throws Exception {
        try (ManifestTracker t = new ManifestTracker("m", true, () -> 0)) {
            t.offer(manifest(1, TCP));
            assertEquals(List.of(TCP), t.awaitTarget().locations());
            t.offer(manifest(1, PFS));
            assertEquals(List.of(TCP, PFS), t.awaitTarget().locations());
        }
    }

    @Test
    void aFailedVersionIsRetriedAfterTheBackoffUnlessANewerOneCame() throws Exception {
        try (ManifestTracker t = new ManifestTracker("m", true, () -> 0)) {
            t.offer(manifest(1, TCP));
            Manifest failed = t.awaitTarget();
            t.awaitRetry(failed, 1);
            assertSame(failed, t.awaitTarget(), "retried");
            t.offer(manifest(2, TCP));
            t.awaitRetry(failed, 60_000); // returns at once: something newer is waiting
            assertEquals(2, t.awaitTarget().version());
        }
    }

    @Test
    void listenersHearOfEachNewerVersionOnceAndTheLastOneOnRegistering() {
        try (ManifestTracker t = new ManifestTracker("m", false, () -> 0)) {
            List<Long> early = new CopyOnWriteArrayList<>();
            t.onManifest(m -> early.add(m.version()));
            t.offer(manifest(1, TCP));
            t.offer(manifest(1, PFS));
            t.offer(manifest(3, TCP));
            t.offer(manifest(2, TCP));
            t.offer(new Manifest("other", 9, "p", 0, new LinkedHashMap<>(), List.of(), List.of()));
            assertEquals(List.of(1L, 3L), early);
            List<Long> late = new CopyOnWriteArrayList<>();
            t.onManifest(m -> late.add(m.version()));
            assertEquals(List.of(3L), late);
            assertTrue(t.find(9).isEmpty(), "another model's manifest is not kept");
        }
    }

    @Test
    void withoutAutoloadNothingIsATargetAndClosingEndsTheWait() throws Exception {
        ManifestTracker t = new ManifestTracker("m", false, () -> 0);
        t.offer(manifest(1, TCP));
        CompletableFuture<Manifest> target = CompletableFuture.supplyAsync(() -> {
            try {
                return t.awaitTarget();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        t.close();
        assertNull(target.get(20, TimeUnit.SECONDS), "no target, only the close");
    }

    @Test
    void aSecondManifestOfTheSameVersionWithOtherTensorsIsRefusedNotMerged() throws Exception {
        Manifest first = manifest(1, TCP);
        Manifest other = new Manifest(
                "m",
                1,
                "restarted",
                0,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(new TensorInfo("w", DType.U8, new long[] {4}, 0, 4), new ContentHash(7, 7))),
                List.of(PFS));
        try (ManifestTracker t = new ManifestTracker("m", true, () -> 0)) {
            t.offer(first);
            assertSame(first, t.awaitTarget());
            t.offer(other);
            Manifest kept = t.find(1).orElseThrow();
            assertEquals(
                    List.of(TCP),
                    kept.locations(),
                    "the other bytes' location is not merged under the first one's hashes");
            assertEquals(first.tensors(), kept.tensors());
            t.offer(manifest(1, PFS));
            assertEquals(
                    List.of(TCP, PFS),
                    t.awaitTarget().locations(),
                    "the same bytes announced again still add locations");
        }
    }

    @Test
    void aVersionInALogLineHasNoGroupingSeparators() {
        // the warnings read "v1,795,484,765,965": MessageFormat groups a long's digits
        long clock = 1_795_484_765_965L;
        Manifest first = manifest(clock, TCP);
        Manifest other = new Manifest(
                "m",
                clock,
                "restarted",
                0,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(new TensorInfo("w", DType.U8, new long[] {4}, 0, 4), new ContentHash(7, 7))),
                List.of(PFS));
        try (LogCapture log = new LogCapture(ManifestTracker.class.getName());
                ManifestTracker t = new ManifestTracker("m", true, () -> 0)) {
            t.offer(first);
            t.offer(other);
            assertEquals(
                    List.of("consumer m: refused a second v1795484765965 from restarted whose tensors differ from the"
                            + " one p announced first"),
                    log.formattedLines());
        }
    }

    @Test
    void onlyTheLastSixteenVersionsAreKept() {
        try (ManifestTracker t = new ManifestTracker("m", false, () -> 0)) {
            for (long v = 1; v <= 20; v++) {
                t.offer(manifest(v, TCP));
            }
            assertTrue(t.find(4).isEmpty());
            assertEquals(5, t.find(5).orElseThrow().version());
            assertEquals(20, t.find(20).orElseThrow().version());
        }
    }
}
