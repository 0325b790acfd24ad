package io.viper.testing;

import io.viper.ViperConfig;
import io.viper.auth.Handshake;
import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A test double for SDK tests in viper-core: a transport within one JVM ({@code mem://name}) with fault injection.
 * Servers register in a static map; clients copy under a lease, in pieces of {@link #PIECE} bytes from the last to the
 * first, reporting each piece as it lands (as a transport with several GETs in flight does), so that the consumer
 * verifies out of order while the rest arrives. Each bind URI {@code mem://name} is one server; {@link #faults(String)}
 * corrupts or fails reads from it.
 */
public final class InMemoryTransportProvider implements TransportProvider {
    private static final Map<String, Server> SERVERS = new ConcurrentHashMap<>();
    private static final Map<String, Faults> FAULTS = new ConcurrentHashMap<>();
    /** Bytes per piece a read copies and reports. */
    public static final long PIECE = 1L << 20;

    /** Fault switches for the server named {@code name}: counts of reads to corrupt or fail. */
    public static Faults faults(String name) {
        return FAULTS.computeIfAbsent(name, n -> new Faults());
    }

    /**
     * Takes a read lease on {@code model} v{@code version} as a consumer's read on server {@code name} would; null when
     * refused.
     */
    public static ReadLease lease(String name, String model, long version) {
        StagedCheckpoint staged = SERVERS.get(name).exposed.get(model + "/" + version);
        return staged == null ? null : staged.tryLease();
    }

    /** The versions server {@code name} was told to withdraw, as {@code model/version}, in order. */
    public static List<String> withdrawn(String name) {
        return SERVERS.get(name).withdrawn;
    }

    /** Resets all faults (call in @BeforeEach). */
    public static void resetFaults() {
        FAULTS.clear();
    }

    /** Fault injection counters; each read consumes one. */
    public static final class Faults {
        /** Reads that flip the byte in the middle of the destination. */
        public final AtomicInteger corruptReads = new AtomicInteger();

        public final AtomicInteger failReads = new AtomicInteger();
        /** Reads that throw an {@link Error}, as a transport whose native library is missing does. */
        public final AtomicInteger errorReads = new AtomicInteger();

        public final AtomicInteger reads = new AtomicInteger();
        /**
         * While not negative, every read flips the byte at this destination offset in flight (before its piece is
         * reported).
         */
        public final AtomicLong corruptAt = new AtomicLong(-1);
        /** While not negative, every read fails as a producer that died after this many pieces arrived. */
        public final AtomicInteger dieAfterPieces = new AtomicInteger(-1);
        /** Reads to refuse in the handshake, as the tcp, ucx and GPU clients report it. */
        public final AtomicInteger refuseReads = new AtomicInteger();
        /**
         * Whether those refusals are of the consumer's credentials (final for it), else a stranger on the port's
         * (retried).
         */
        public volatile boolean refuseCredentials = true;
    }

    @Override
    public String scheme() {
        return "mem";
    }

    @Override
    public Tier tier() {
        return Tier.HOST;
    }

    @Override
    public int priority() {
        return 50;
    }

    @Override
    public Optional<String> unavailableReason() {
        return Optional.empty();
    }

    @Override
    public TransportServer openServer(URI bind, ViperConfig config) {
        String name = bind.getAuthority();
        Server s = new Server(name);
        if (SERVERS.putIfAbsent(name, s) != null) {
            throw new ViperConfigException("mem://" + name + " is already bound");
        }
        return s;
    }

    @Override
    public TransportClient openClient(ViperConfig config) {
        return new Client();
    }

    private static final class Server implements TransportServer {
        private final String name;
        private final Map<String, StagedCheckpoint> exposed = new ConcurrentHashMap<>();
        private final List<String> withdrawn = new CopyOnWriteArrayList<>();

        Server(String name) {
            this.name = name;
        }

        @Override
        public Location location() {
            return new Location(URI.create("mem://" + name), Tier.HOST);
        }

        @Override
        public void expose(StagedCheckpoint staged) {
            exposed.put(staged.model() + "/" + staged.version(), staged);
        }

        @Override
        public void withdraw(StagedCheckpoint staged) {
            withdrawn.add(staged.model() + "/" + staged.version());
            exposed.remove(staged.model() + "/" + staged.version(), staged);
        }

        @Override
        public void close() {
            SERVERS.remove(name, this);
            exposed.clear();
        }
    }

    private static final class Client implements TransportClient.ArrivalReporting {
        @Override
        public void read(
                Manifest manifest,
                Location location,
                List<ByteRange> ranges,
                MemorySegment destination,
                Arrivals arrivals) {
            String name = location.uri().getAuthority();
            Faults f = faults(name);
            f.reads.incrementAndGet();
            Server s = SERVERS.get(name);
            if (s == null) {
                throw new RetriableViperException(ViperException.Reason.UNAVAILABLE, "mem://" + name + " is gone");
            }
            if (f.refuseReads.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                Handshake.Refused r = f.refuseCredentials
                        ? new Handshake.Refused("mem://" + name + " refused this client: authentication failed", true)
                        : new Handshake.Refused("mem://" + name
                                + ": not a Viper server (wrong magic): is it a Viper server of this version?");
                throw new ViperConfigException(
                        "mem read of " + manifest.model() + " v" + manifest.version() + ": " + r.getMessage(), r);
            }
            if (f.errorReads.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                throw new UnsatisfiedLinkError("injected: no native library for mem://" + name);
            }
            StagedCheckpoint staged = s.exposed.get(manifest.model() + "/" + manifest.version());
            ReadLease lease = staged == null ? null : staged.tryLease();
            if (lease == null) {
                throw new ViperNotFoundException(
                        manifest.model() + " v" + manifest.version() + " is not staged at mem://" + name);
            }
            try (lease) {
                if (f.failReads.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    throw new RetriableViperException(
                            ViperException.Reason.TRANSFER, "injected failure reading from mem://" + name);
                }
                long flipMiddle =
                        f.corruptReads.getAndUpdate(n -> Math.max(0, n - 1)) > 0 ? destination.byteSize() / 2 : -1;
                long flipAt = f.corruptAt.get();
                List<ByteRange> pieces = new ArrayList<>();
                for (ByteRange r : ranges) {
                    for (long done = 0; done < r.length(); done += PIECE) {
                        pieces.add(new ByteRange(
                                r.sourceOffset() + done,
                                Math.min(PIECE, r.length() - done),
                                r.destinationOffset() + done));
                    }
                }
                int arrived = 0;
                for (ByteRange p : pieces.reversed()) {
                    if (arrived++ == f.dieAfterPieces.get()) {
                        throw new RetriableViperException(
                                ViperException.Reason.UNAVAILABLE,
                                "mem://" + name + ": the producer died mid-transfer");
                    }
                    MemorySegment.copy(staged.data(), p.sourceOffset(), destination, p.destinationOffset(), p.length());
                    flipIfInside(destination, p, flipMiddle);
                    flipIfInside(destination, p, flipAt);
                    arrivals.arrived(p.destinationOffset(), p.length());
                }
            }
        }

        private static void flipIfInside(MemorySegment destination, ByteRange piece, long at) {
            if (at >= piece.destinationOffset() && at < piece.destinationOffset() + piece.length()) {
                destination.set(ValueLayout.JAVA_BYTE, at, (byte) ~destination.get(ValueLayout.JAVA_BYTE, at));
            }
        }

        @Override
        public void close() {}
    }
}
