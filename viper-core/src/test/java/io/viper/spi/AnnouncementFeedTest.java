package io.viper.spi;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The delivery rules every notifier shares, on a feed whose threads are the test's own: what a subscription gets, what
 * is skipped and told, what a source that sends only followed models is told.
 */
class AnnouncementFeedTest {
    private static final System.Logger LOG = System.getLogger(AnnouncementFeedTest.class.getName());

    /** Listener calls the feed handed to its dispatcher and that have not run yet. */
    private final List<Runnable> dispatched = new ArrayList<>();

    private AnnouncementFeed feed(AnnouncementFeed.Demand demand) {
        return demand == null
                ? new AnnouncementFeed("feed", LOG, Runnable::run, Runnable::run)
                : new AnnouncementFeed("feed", LOG, Runnable::run, Runnable::run, demand);
    }

    private static Manifest manifest(String model, long version, String... locations) {
        List<Location> locs = new ArrayList<>();
        for (String l : locations) {
            locs.add(new Location(URI.create(l), Tier.HOST));
        }
        return new Manifest(
                model,
                version,
                "feed-test",
                1L,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(
                        new TensorInfo("w", DType.F32, new long[] {2}, 0, 8), new ContentHash(version, 7))),
                locs);
    }

    private static byte[] encoded(String model, long version, String... locations) {
        return ManifestCodec.encode(manifest(model, version, locations));
    }

    /** What one subscription heard, in order: "v3", "v3+8" (with 8 bytes), "problem: ...", "failure: ...". */
    private static final class Heard implements Notifier.ManifestListener {
        final List<String> events = new ArrayList<>();
        final List<byte[]> data = new ArrayList<>();
        final boolean quick;

        Heard(boolean quick) {
            this.quick = quick;
        }

        @Override
        public void onManifest(Manifest m) {
            events.add("v" + m.version()
                    + (m.locations().size() > 1 ? " with " + m.locations().size() + " locations" : ""));
        }

        @Override
        public void onManifest(Manifest m, MemorySegment bytes) {
            assertTrue(bytes.isReadOnly(), "bytes reach the listener read-only");
            events.add("v" + m.version() + "+" + bytes.byteSize());
            data.add(bytes.toArray(ValueLayout.JAVA_BYTE));
        }

        @Override
        public void onProblem(String problem) {
            events.add("problem: " + problem);
        }

        @Override
        public void onFailure(ViperException failure) {
            events.add("failure: " + failure.getMessage());
        }

        @Override
        public boolean quick() {
            return quick;
        }
    }

    @Test
    void aSubscriptionGetsTheNewestAtOnceThenOnlyNewerOrChangedVersions() {
        AnnouncementFeed feed = feed(null);
        feed.offer("m", encoded("m", 1, "tcp://h:1"), null, "test");
        feed.offer("m", encoded("m", 2, "tcp://h:1"), null, "test");
        Heard heard = new Heard(false);
        feed.subscribe("m", heard);
        feed.offer("m", encoded("m", 1, "tcp://h:1"), null, "test");
        feed.offer("m", encoded("m", 2, "tcp://h:1"), null, "test");
        feed.offer("m", encoded("m", 2, "tcp://h:1", "file:///pfs/m/2"), null, "test");
        feed.offer("m", encoded("m", 3, "tcp://h:1"), null, "test");
        feed.offer("other", encoded("other", 9, "tcp://h:1"), null, "test");
        assertEquals(List.of("v2", "v2 with 2 locations", "v3"), heard.events);
    }

    @Test
    void whatDoesNotDecodeOrNamesAnotherModelIsSkippedAndTold() {
        AnnouncementFeed feed = feed(null);
        Heard heard = new Heard(false);
        feed.subscribe("m", heard);
        feed.offer("m", "{not json".getBytes(StandardCharsets.UTF_8), null, "record 5");
        feed.offer("m", encoded("x", 4, "tcp://h:1"), null, "record 6");
        feed.offer("m", encoded("m", 1, "tcp://h:1"), null, "record 7");
        assertEquals(3, heard.events.size(), heard.events.toString());
        assertTrue(
                heard.events.get(0).startsWith("problem: feed: skipped record 5: manifest is not valid JSON"),
                heard.events.get(0));
        assertTrue(
                heard.events.get(1).contains("record 6") && heard.events.get(1).contains("does not match"),
                heard.events.get(1));
        assertEquals("v1", heard.events.get(2));
    }

    @Test
    void bytesThatFitTravelReadOnlyBytesThatDoNotAreDroppedAndTold() {
        AnnouncementFeed feed = feed(null);
        Heard heard = new Heard(false);
        feed.subscribe("m", heard);
        byte[] bytes = {1, 2, 3, 4, 5, 6, 7, 8};
        feed.offer("m", encoded("m", 1, "tcp://h:1"), bytes, "test");
        feed.offer("m", encoded("m", 2, "tcp://h:1"), new byte[5], "test");
        feed.offer("m", encoded("m", 3, "tcp://h:1"), new byte[0], "test");
        assertEquals("v1+8", heard.events.get(0));
        assertArrayEquals(bytes, heard.data.getFirst());
        assertTrue(heard.events.get(1).contains("came with 5 bytes for a version of 8"), heard.events.get(1));
        assertEquals(List.of("v2", "v3"), heard.events.subList(2, 4), "the manifests arrive without the bytes");
    }

    @Test
    void aSourceOfFollowedModelsIsToldOfTheFirstAndLastSubscriptionAndItsModelForgotten() {
        List<String> told = new ArrayList<>();
        AnnouncementFeed feed = feed(new AnnouncementFeed.Demand() {
            @Override
            public void follow(String model) {
                told.add("follow " + model);
            }

            @Override
            public void unfollow(String model) {
                told.add("unfollow " + model);
            }
        });
        feed.offer("m", encoded("m", 1, "tcp://h:1"), null, "test");
        Heard first = new Heard(false);
        Notifier.Subscription a = feed.subscribe("m", first);
        Notifier.Subscription b = feed.subscribe("m", new Heard(false));
        assertEquals(List.of(), first.events, "an announcement for a model nobody followed was dropped");
        feed.offer("m", encoded("m", 2, "tcp://h:1"), null, "test");
        assertEquals(List.of("m"), feed.models());
        a.close();
        a.close();
        b.close();
        assertEquals(List.of("follow m", "unfollow m"), told);
        assertEquals(List.of(), feed.models());
        Heard later = new Heard(false);
        feed.subscribe("m", later);
        assertEquals(List.of(), later.events, "nothing stale: the source sends the newest when followed again");
        assertEquals(List.of("v2"), first.events);
    }

    @Test
    void whileHeldOnlyTheNewestIsDeliveredOnRelease() {
        AnnouncementFeed feed = feed(null);
        Heard heard = new Heard(false);
        feed.subscribe("m", heard);
        feed.hold();
        feed.offer("m", encoded("m", 1, "tcp://h:1"), null, "test");
        feed.offer("m", encoded("m", 2, "tcp://h:1"), null, "test");
        Heard joined = new Heard(false);
        feed.subscribe("m", joined);
        assertEquals(List.of(), heard.events);
        assertEquals(List.of(), joined.events);
        feed.release();
        feed.release();
        assertEquals(List.of("v2"), heard.events);
        assertEquals(List.of("v2"), joined.events);
    }

    @Test
    void troubleAndFailureReachEverySubscriptionAndLaterOnes() {
        AnnouncementFeed feed = feed(null);
        Heard before = new Heard(false);
        feed.subscribe("m", before);
        feed.trouble("unreachable");
        Heard during = new Heard(false);
        feed.subscribe("n", during);
        feed.recovered();
        Heard after = new Heard(false);
        feed.subscribe("m", after);
        feed.problem("m", "only m");
        feed.failed(new ViperConfigException("refused"));
        Heard late = new Heard(false);
        feed.subscribe("n", late);
        assertEquals(List.of("problem: unreachable", "problem: only m", "failure: refused"), before.events);
        assertEquals(List.of("problem: unreachable", "failure: refused"), during.events);
        assertEquals(List.of("problem: only m", "failure: refused"), after.events);
        assertEquals(List.of("failure: refused"), late.events);
    }

    @Test
    void quickListenersRunOnTheFeedThreadOthersThroughTheDispatcher() {
        AnnouncementFeed feed = new AnnouncementFeed("feed", LOG, Runnable::run, dispatched::add);
        Heard quick = new Heard(true);
        Heard slow = new Heard(false);
        feed.subscribe("m", quick);
        feed.subscribe("m", slow);
        feed.offer("m", encoded("m", 1, "tcp://h:1"), null, "test");
        feed.trouble("slow down");
        assertEquals(List.of("v1"), quick.events, "called at once, while offered");
        assertEquals(List.of(), slow.events);
        assertEquals(3, dispatched.size(), "the slow listener's manifest and both problems wait for the dispatcher");
        dispatched.forEach(Runnable::run);
        assertEquals(List.of("v1", "problem: slow down"), quick.events);
        assertEquals(List.of("v1", "problem: slow down"), slow.events);
    }

    @Test
    void aThrowingListenerChangesNothingAndClosedOnesHearNothing() {
        AnnouncementFeed feed = new AnnouncementFeed("feed", LOG, Runnable::run, dispatched::add);
        List<Long> seen = new ArrayList<>();
        feed.subscribe("m", m -> {
            seen.add(m.version());
            throw new IllegalStateException("listener bug");
        });
        Heard closed = new Heard(false);
        feed.subscribe("m", closed).close();
        Heard open = new Heard(false);
        feed.subscribe("m", open);
        feed.offer("m", encoded("m", 1, "tcp://h:1"), null, "test");
        feed.offer("m", encoded("m", 2, "tcp://h:1"), null, "test");
        dispatched.forEach(Runnable::run);
        dispatched.clear();
        assertEquals(List.of(1L, 2L), seen);
        assertEquals(List.of(), closed.events);
        feed.offer("m", encoded("m", 3, "tcp://h:1"), null, "test");
        feed.close();
        dispatched.forEach(Runnable::run);
        assertEquals(List.of("v1", "v2"), open.events, "nothing reaches a listener once the feed is closed");
    }
}
