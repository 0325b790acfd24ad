package io.viper.testing;

import io.viper.ViperConfig;
import io.viper.errors.ViperNotFoundException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import io.viper.spi.ByteRange;
import io.viper.spi.DeviceBuffer;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A GPU-tier transport {@code memgpu://name} over {@link FakeGpuProvider} memory, like cuda-ipc within one process:
 * reads copy from the producer's device staging (or its host data when it staged on the host) under a lease. Available
 * only while the fake GPU is enabled. Records, per server, whether exposed versions came with device memory, and can
 * corrupt reads.
 */
public final class InMemoryGpuTransportProvider implements TransportProvider {
    private static final Map<String, Server> SERVERS = new ConcurrentHashMap<>();
    /** Versions exposed with device memory, per server name. */
    public static final Map<String, AtomicInteger> DEVICE_EXPOSED = new ConcurrentHashMap<>();
    /** Reads to corrupt, per server name. */
    public static final Map<String, AtomicInteger> CORRUPT = new ConcurrentHashMap<>();

    @Override
    public String scheme() {
        return "memgpu";
    }

    @Override
    public Tier tier() {
        return Tier.GPU;
    }

    @Override
    public int priority() {
        return 0;
    }

    @Override
    public Optional<String> unavailableReason() {
        return new FakeGpuProvider().unavailableReason();
    }

    @Override
    public TransportServer openServer(URI bind, ViperConfig config) {
        Server s = new Server(bind.getAuthority());
        SERVERS.put(s.name, s);
        return s;
    }

    @Override
    public TransportClient openClient(ViperConfig config) {
        return new Client();
    }

    private static final class Server implements TransportServer {
        final String name;
        final Map<String, StagedCheckpoint> exposed = new ConcurrentHashMap<>();

        Server(String name) {
            this.name = name;
        }

        @Override
        public Location location() {
            return new Location(URI.create("memgpu://" + name), Tier.GPU);
        }

        @Override
        public void expose(StagedCheckpoint staged) {
            if (staged.device().isPresent()) {
                DEVICE_EXPOSED.computeIfAbsent(name, n -> new AtomicInteger()).incrementAndGet();
            }
            exposed.put(staged.model() + "/" + staged.version(), staged);
        }

        @Override
        public void withdraw(StagedCheckpoint staged) {
            exposed.remove(staged.model() + "/" + staged.version(), staged);
        }

        @Override
        public void close() {
            SERVERS.remove(name, this);
        }
    }

    private static final class Client implements TransportClient {
        private interface Copy {
            void copy(MemorySegment src, ByteRange r);
        }

        private void transfer(Manifest m, Location loc, List<ByteRange> ranges, Copy copy, Runnable corrupt) {
            String name = loc.uri().getAuthority();
            Server s = SERVERS.get(name);
            StagedCheckpoint staged = s == null ? null : s.exposed.get(m.model() + "/" + m.version());
            ReadLease lease = staged == null ? null : staged.tryLease();
            if (lease == null) {
                throw new ViperNotFoundException(m.model() + " v" + m.version() + " is not staged at " + loc.uri());
            }
            try (lease) {
                Optional<DeviceBuffer> dev = staged.device();
                MemorySegment src = dev.isPresent()
                        ? FakeGpuProvider.at(
                                dev.get().devicePointer(), staged.data().byteSize())
                        : staged.data();
                for (ByteRange r : ranges) {
                    copy.copy(src, r);
                }
                if (CORRUPT.getOrDefault(name, new AtomicInteger()).getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                    corrupt.run();
                }
            }
        }

        @Override
        public void read(Manifest m, Location loc, List<ByteRange> ranges, MemorySegment destination) {
            transfer(
                    m,
                    loc,
                    ranges,
                    (src, r) ->
                            MemorySegment.copy(src, r.sourceOffset(), destination, r.destinationOffset(), r.length()),
                    () -> {});
        }

        @Override
        public void readToDevice(Manifest m, Location loc, List<ByteRange> ranges, DeviceBuffer destination) {
            MemorySegment dst = FakeGpuProvider.at(destination.devicePointer(), destination.byteSize());
            transfer(
                    m,
                    loc,
                    ranges,
                    (src, r) -> MemorySegment.copy(src, r.sourceOffset(), dst, r.destinationOffset(), r.length()),
                    () -> {
                        long at = dst.byteSize() / 2;
                        dst.set(ValueLayout.JAVA_BYTE, at, (byte) ~dst.get(ValueLayout.JAVA_BYTE, at));
                    });
        }

        @Override
        public void close() {}
    }
}
