package io.viper.internal.consumer;

import io.viper.internal.ViperMetrics;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.spi.ReadLease;
import io.viper.spi.StagedCheckpoint;
import io.viper.spi.TransportServer;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A version this consumer holds in a receive buffer, served to other consumers on its relay servers
 * ({@code viper.consumer.relay.transports}) as a {@link StagedCheckpoint}: while it arrives, a unit (a block, or a
 * whole tensor when the version has no block ids) becomes {@linkplain #readable readable} once it is verified against
 * the producer's manifest ({@link UnitCheck}), or once it is known to equal a verified one (left in place, copied from
 * the version served); whole, it stays served until it is retired.
 *
 * <p>Servers that stream what is readable ({@link TransportServer#waitsForReadable()}) get it when its receive starts;
 * the others once it is whole ({@link #completed()}). {@link #retire} withdraws it and hands the buffer back
 * ({@code release}) when the last read lease closes, so that no reader streams from a buffer that is refilled;
 * {@link #abandon} (the receive failed) withdraws it and ends the reads in progress at once (their readers read the
 * rest elsewhere). Thread-safe: readers' leases and readiness queries come from the servers' threads, readiness changes
 * from the fetch thread and the transport's arrival thread.
 */
final class RelayedVersion implements StagedCheckpoint {
    private final Manifest manifest;
    private final MemorySegment data;
    private final List<TransportServer> servers;
    private final ViperMetrics metrics;
    /** Where each unit starts in the data section (the first at 0); a unit runs to the next one's start. */
    private final long[] starts;
    /** Where the bytes each unit's check covers end (a unit's padding after them needs no check). */
    private final long[] dataEnds;

    private final boolean[] ready;
    private final List<Runnable> waiters = new ArrayList<>();
    private final AtomicBoolean exposedToAll = new AtomicBoolean();
    private int leases;
    private boolean abandoned;
    private boolean retired;
    private Runnable release;

    private RelayedVersion(Manifest manifest, MemorySegment data, List<TransportServer> servers, ViperMetrics metrics) {
        this.manifest = manifest;
        this.data = data.asReadOnly();
        this.servers = servers;
        this.metrics = metrics;
        SortedMap<Long, Long> units = units(manifest);
        this.starts = units.keySet().stream().mapToLong(Long::longValue).toArray();
        this.dataEnds = units.values().stream().mapToLong(Long::longValue).toArray();
        this.ready = new boolean[starts.length];
        for (int u = 0; u < starts.length; u++) {
            ready[u] = dataEnds[u] == starts[u]; // nothing to check: an empty tensor, or bytes before the first one
        }
    }

    /** Exposes {@code m}, about to arrive in {@code data}, on the servers that stream what is readable. */
    static RelayedVersion expose(Manifest m, MemorySegment data, List<TransportServer> servers, ViperMetrics metrics) {
        RelayedVersion v = new RelayedVersion(m, data, servers, metrics);
        for (TransportServer s : servers) {
            if (s.waitsForReadable()) {
                s.expose(v);
            }
        }
        return v;
    }

    /**
     * Every unit, by its start, and the end of the bytes its check covers: every block of every tensor when the version
     * has block ids, else every tensor. The bytes between units (alignment) belong to the unit before them, and a unit
     * at 0 covering nothing stands for those before the first tensor.
     */
    static SortedMap<Long, Long> units(Manifest m) {
        TreeMap<Long, Long> out = new TreeMap<>();
        for (TensorEntry e : m.tensors()) {
            long off = e.info().offset();
            long len = e.info().length();
            if (e.blocks().isEmpty()) {
                out.merge(off, off + len, Math::max);
            } else {
                for (int j = 0; j < e.blocks().ids().size(); j++) {
                    long start = off + e.blocks().start(j);
                    out.merge(start, start + e.blocks().length(j, len), Math::max);
                }
            }
        }
        out.putIfAbsent(0L, 0L);
        return out;
    }

    /** The unit holding byte {@code offset}. */
    int unitOf(long offset) {
        int i = Arrays.binarySearch(starts, offset);
        return i >= 0 ? i : -i - 2;
    }

    long unitEnd(int unit) {
        return unit + 1 < starts.length ? starts[unit + 1] : manifest.totalBytes();
    }

    /** Unit {@code unit} is verified: readers may have it. */
    void markReady(int unit) {
        List<Runnable> toRun;
        synchronized (this) {
            if (ready[unit]) {
                return;
            }
            ready[unit] = true;
            toRun = drainWaiters();
        }
        toRun.forEach(Runnable::run);
    }

    /**
     * Every unit whose checked bytes lie wholly inside {@code [offset, offset + length)} is verified (held, copied).
     */
    void markReady(long offset, long length) {
        List<Runnable> toRun;
        synchronized (this) {
            for (int u = unitOf(offset); u < starts.length && starts[u] < offset + length; u++) {
                if (starts[u] >= offset && dataEnds[u] <= offset + length) {
                    ready[u] = true;
                }
            }
            toRun = drainWaiters();
        }
        toRun.forEach(Runnable::run);
    }

    /** The version is whole and verified: the servers that do not stream partial versions get it now. */
    void completed() {
        markReady(0, manifest.totalBytes());
        if (exposedToAll.compareAndSet(false, true)) {
            for (TransportServer s : servers) {
                if (!s.waitsForReadable()) {
                    s.expose(this);
                }
            }
        }
    }

    /** Its receive failed: withdraws it and ends reads in progress (readable turns -1). */
    void abandon() {
        List<Runnable> toRun;
        synchronized (this) {
            abandoned = true;
            toRun = drainWaiters();
        }
        withdraw();
        toRun.forEach(Runnable::run);
    }

    /** It no longer serves here: withdraws it, and runs {@code release} once no read lease is open. */
    void retire(Runnable release) {
        withdraw();
        boolean now;
        synchronized (this) {
            retired = true;
            now = leases == 0;
            if (!now) {
                this.release = release;
            }
        }
        if (now) {
            release.run();
        }
    }

    private void withdraw() {
        for (TransportServer s : servers) {
            s.withdraw(this);
        }
    }

    private List<Runnable> drainWaiters() {
        List<Runnable> toRun = List.copyOf(waiters);
        waiters.clear();
        return toRun;
    }

    @Override
    public String model() {
        return manifest.model();
    }

    @Override
    public long version() {
        return manifest.version();
    }

    @Override
    public Manifest manifest() {
        return manifest;
    }

    @Override
    public MemorySegment data() {
        return data;
    }

    @Override
    public synchronized ReadLease tryLease() {
        if (retired || abandoned) {
            return null;
        }
        leases++;
        AtomicBoolean closed = new AtomicBoolean();
        return () -> {
            if (closed.compareAndSet(false, true)) {
                Runnable r = null;
                synchronized (this) {
                    leases--;
                    if (leases == 0 && release != null) {
                        r = release;
                        release = null;
                    }
                }
                if (r != null) {
                    r.run();
                }
            }
        };
    }

    @Override
    public synchronized long readable(long offset, long length) {
        if (abandoned) {
            return -1;
        }
        long end = offset;
        for (int u = unitOf(offset); u < starts.length && end < offset + length && ready[u]; u++) {
            end = unitEnd(u);
        }
        return Math.min(length, Math.max(0, end - offset));
    }

    @Override
    public void onReadable(Runnable callback) {
        synchronized (this) {
            if (!abandoned) {
                waiters.add(callback);
                return;
            }
        }
        callback.run();
    }

    @Override
    public void served(long bytes) {
        metrics.served(manifest.model(), "relay", bytes);
    }
}
