package io.viper.internal.producer;

import io.viper.spi.SourceTracker;
import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

/**
 * The producer's tracker ({@link SourceTracker}): per version, the sources in the order they came (the producer first,
 * then each relaying reader as it asks) and how many readers each was given. A reader gets the first source with fewer
 * than {@code readersPerSource} readers, so a fan-out of 1 lays the fleet out as a chain in the order of arrival and k
 * as a tree of fan-out k, breadth first; the producer sends one copy per version while relays have room. When every
 * source is full (readers that relay nothing, late joiners) the relay with the fewest readers takes one more, so that
 * the producer is the source of last resort. A relay that a reader reports as failed is dropped as a source of that
 * version.
 *
 * <p>Only the newest {@value #VERSIONS_KEPT} versions of a model and {@value #MAX_SOURCES} sources per version are
 * kept: a reader of an older version, or beyond that, reads from the producer. Thread-safe: one lock; each call is a
 * few list steps.
 */
public final class FleetTracker implements SourceTracker {
    static final int VERSIONS_KEPT = 4;
    static final int MAX_SOURCES = 4096;

    private final int readersPerSource;
    private final BiConsumer<String, URI> dropped;
    private final Map<String, LinkedHashMap<Long, List<Source>>> models = new HashMap<>();

    /** One source of a version: its locations (empty for the producer) and the readers given to it. */
    private static final class Source {
        final List<URI> uris;
        int readers;
        boolean failed;

        Source(List<URI> uris) {
            this.uris = List.copyOf(uris);
        }
    }

    /**
     * @param readersPerSource {@code viper.fleet.readers.per.source}
     * @param dropped told (model, relay) when a relay is dropped as a source, for the log line and the metric
     */
    public FleetTracker(int readersPerSource, BiConsumer<String, URI> dropped) {
        if (readersPerSource < 1) {
            throw new IllegalArgumentException("readers per source: " + readersPerSource);
        }
        this.readersPerSource = readersPerSource;
        this.dropped = dropped;
    }

    @Override
    public List<URI> assign(String model, long version, List<URI> relay, List<URI> failed) {
        List<URI> droppedNow = new ArrayList<>();
        List<URI> chosen;
        synchronized (this) {
            List<Source> sources = sources(model, version);
            if (sources == null) {
                return List.of();
            }
            for (Source s : sources) {
                if (!s.failed && !Collections.disjoint(s.uris, failed)) {
                    s.failed = true;
                    droppedNow.add(s.uris.getFirst());
                }
            }
            // A reader that asks again (it retries, or restarted) keeps its place and is given only a source that
            // came before it: a source never reads, directly or not, from its own readers.
            int self = sources.size();
            for (int i = 1; i < sources.size(); i++) {
                if (!Collections.disjoint(sources.get(i).uris, relay)) {
                    self = i;
                    break;
                }
            }
            List<Source> before = sources.subList(0, self);
            Source pick = null;
            for (Source s : before) {
                if (!s.failed && s.readers < readersPerSource) {
                    pick = s;
                    break;
                }
            }
            if (pick == null) {
                for (Source s : before) {
                    if (!s.failed && !s.uris.isEmpty() && (pick == null || s.readers < pick.readers)) {
                        pick = s;
                    }
                }
            }
            if (pick == null) {
                pick = sources.getFirst();
            }
            pick.readers++;
            chosen = pick.uris;
            if (!relay.isEmpty() && self == sources.size() && sources.size() < MAX_SOURCES) {
                sources.add(new Source(relay));
            }
        }
        for (URI d : droppedNow) {
            dropped.accept(model, d);
        }
        return chosen;
    }

    /** The sources of {@code version}, created for a new one; null for a version older than those kept. */
    private List<Source> sources(String model, long version) {
        LinkedHashMap<Long, List<Source>> versions = models.computeIfAbsent(model, m -> new LinkedHashMap<>());
        List<Source> found = versions.get(version);
        if (found != null) {
            return found;
        }
        if (versions.size() >= VERSIONS_KEPT && versions.keySet().stream().allMatch(v -> v > version)) {
            return null;
        }
        List<Source> created = new ArrayList<>();
        created.add(new Source(List.of()));
        versions.put(version, created);
        while (versions.size() > VERSIONS_KEPT) {
            long oldest =
                    versions.keySet().stream().mapToLong(Long::longValue).min().orElseThrow();
            versions.remove(oldest);
        }
        return created;
    }
}
