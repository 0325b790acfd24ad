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
        this.starts = unitStarts(manifest);
        this.ready = new boolean[starts.length];
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
     * The start of every unit: every block of every tensor when the version has block ids, else every tensor; the bytes
     * between units (alignment) belong to the unit before them.
     */
    static long[] unitStarts(Manifest m) {
        List<Long> out = new ArrayList<>();
        for (TensorEntry e : m.tensors()) {
            long off = e.info().offset();
            if (e.blocks().isEmpty()) {
                out.add(off);
            } else {
                for (int j = 0; j < e.blocks().ids().size(); j++) {
                    out.add(off + e.blocks().start(j));
                }
            }
        }
        long[] a = out.stream().mapToLong(Long::longValue).sorted().distinct().toArray();
        if (a.length == 0 || a[0] != 0) {
            long[] b = new long[a.length + 1];
            System.arraycopy(a, 0, b, 1, a.length);
            a = b;
        }
        return a;
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

    /** Every unit lying wholly inside {@code [offset, offset + length)} is verified (held, copied). */
    void markReady(long offset, long length) {
        List<Runnable> toRun;
        synchronized (this) {
            for (int u = unitOf(offset); u < starts.length && unitEnd(u) <= offset + length; u++) {
                if (starts[u] >= offset) {
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
