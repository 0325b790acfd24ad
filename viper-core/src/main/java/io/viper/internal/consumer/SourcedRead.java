package io.viper.internal.consumer;

import io.viper.errors.ViperException;
import io.viper.internal.ViperMetrics;
import io.viper.internal.ViperRuntime;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportServer;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads ranges of a version from where the producer's tracker says ({@link TransportClient#askSources}): a relay that
 * holds or is receiving it, or the producer's location itself. Bytes from a relay are checked unit by unit as they land
 * ({@link UnitCheck}); when a relay fails (it went away, or served a unit that does not match the manifest), the units
 * not yet verified are read from the next source the tracker names, told of the failure, and in the end from the
 * producer: a failed relay costs the units in flight, not the version. A failure of the producer's location itself is
 * thrown, for the fetch loop's next location (the PFS).
 *
 * <p>One instance per consumer; {@link #read} runs on the fetch thread (or a {@code fetch} caller's).
 */
final class SourcedRead {
    private static final System.Logger LOG = System.getLogger(SourcedRead.class.getName());
    /** Relays tried for one read before the rest comes from the producer. */
    private static final int MAX_RELAYS_PER_READ = 8;

    private final String model;
    private final ViperRuntime rt;
    private final List<String> allowedSchemes;

    SourcedRead(String model, ViperRuntime rt, List<String> allowedSchemes) {
        this.model = model;
        this.rt = rt;
        this.allowedSchemes = allowedSchemes;
    }

    ViperMetrics metrics() {
        return rt.metrics();
    }

    /** This consumer's relay servers (empty when it relays nothing). */
    List<TransportServer> relayServers() {
        return rt.relayServers();
    }

    /**
     * Reads {@code ranges} of {@code m} into {@code dst} (destination offsets as given), reporting verified bytes to
     * {@code check}; when {@code relayed} is not null this consumer serves them on as they verify.
     *
     * @return the bytes read from relays
     */
    long read(
            Manifest m,
            Location producer,
            TransportClient client,
            List<ByteRange> ranges,
            MemorySegment dst,
            TransportClient.Arrivals check,
            RelayedVersion relayed) {
        List<URI> own = relayed == null ? List.of() : ownLocations();
        List<URI> failed = new ArrayList<>();
        Optional<Location> source = ask(m, producer, client, own, failed);
        if (source.isEmpty() && relayed == null) {
            client.read(m, producer, ranges, dst, check); // the plain route: producer to this consumer
            return 0;
        }
        UnitCheck units = new UnitCheck(m, dst, check, relayed);
        List<ByteRange> left = ranges;
        long fromRelays = 0;
        for (int tries = 0; ; tries++) {
            Location from = source.orElse(producer);
            TransportClient c = source.isPresent() ? rt.client(from.scheme()).orElseThrow() : client;
            units.source(from.uri());
            long before = bytes(left);
            try {
                c.read(m, from, left, dst, units);
                if (units.failure() != null) {
                    throw units.failure();
                }
                if (source.isPresent()) {
                    fromRelays += before;
                }
                return fromRelays;
            } catch (RuntimeException e) {
                if (source.isEmpty()) {
                    throw e; // the producer's location failed: the fetch loop tries the next one
                }
                left = units.missing(left);
                fromRelays += before - bytes(left);
                String reason = e instanceof ViperException ve
                        ? ve.reason().name()
                        : e.getClass().getSimpleName();
                rt.metrics().failure(model, "relay", reason);
                rt.metrics().relayDropped(model);
                LOG.log(
                        System.Logger.Level.WARNING,
                        "consumer {0} v{1}: relay {2} failed ({3}); reading the {4} bytes left from another source",
                        model,
                        Long.toString(m.version()),
                        from.uri(),
                        e.getMessage(),
                        Long.toString(bytes(left)));
                failed.add(from.uri());
                source = tries + 1 < MAX_RELAYS_PER_READ ? ask(m, producer, client, own, failed) : Optional.empty();
            }
        }
    }

    /** Where the tracker sends this read: a relay's location this consumer can use, or empty for the producer. */
    private Optional<Location> ask(
            Manifest m, Location producer, TransportClient client, List<URI> own, List<URI> failed) {
        if (producer.tier() != Tier.HOST) {
            return Optional.empty();
        }
        Optional<List<URI>> answer = Optional.empty();
        try {
            answer = client.askSources(m, producer, own, failed);
            // A transport without the request (ucx): the producer's tracker answers on another of its locations.
            for (Location other : m.locations()) {
                if (answer.isPresent()) {
                    break;
                }
                if (other.tier() == Tier.HOST && !other.equals(producer)) {
                    Optional<TransportClient> c = rt.client(other.scheme());
                    if (c.isPresent()) {
                        answer = c.get().askSources(m, other, own, failed);
                    }
                }
            }
        } catch (RuntimeException e) {
            // The tracker is the producer: if it cannot answer, the read from it fails the same way and says why.
            LOG.log(System.Logger.Level.DEBUG, "consumer {0}: tracker at {1}: {2}", model, producer.uri(), e);
            return Optional.empty();
        }
        for (URI u : answer.orElse(List.of())) {
            String scheme = u.getScheme();
            if ((allowedSchemes.isEmpty() || allowedSchemes.contains(scheme))
                    && !failed.contains(u)
                    && rt.client(scheme).isPresent()) {
                return Optional.of(new Location(u, Tier.HOST));
            }
        }
        return Optional.empty();
    }

    /**
     * This consumer's relay locations, those that stream a version while it arrives first (a reader takes the first it
     * can use; the others serve a version only once it is whole).
     */
    private List<URI> ownLocations() {
        List<URI> out = new ArrayList<>();
        for (TransportServer s : rt.relayServers()) {
            if (s.waitsForReadable()) {
                out.add(s.location().uri());
            }
        }
        for (TransportServer s : rt.relayServers()) {
            if (!s.waitsForReadable()) {
                out.add(s.location().uri());
            }
        }
        return out;
    }

    private static long bytes(List<ByteRange> ranges) {
        long n = 0;
        for (ByteRange r : ranges) {
            n += r.length();
        }
        return n;
    }
}
