package io.viper.internal.memory;

import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperMemoryException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Accounting for one kind of memory (host or GPU) as a tree, after Arrow's {@code BufferAllocator}: a root per
 * {@code Viper} instance with the instance's limit, a child per producer or consumer with the model's own limit. A
 * {@link Reservation} counts against its budget and every ancestor, so N models share the instance's limit instead of
 * taking N times their own. It only counts: the memory itself comes from the caller's allocator (an arena, a
 * transport's, the GPU provider), which reserves before it allocates and closes the reservation when it frees.
 *
 * <p>A refusal ({@link #reserve}) is a {@link ViperMemoryException} naming the model that asked, the bytes, the budget
 * that had no room and what each holder holds. {@link #close()} with reservations still open logs a warning naming
 * them; they keep counting against the parent until they close.
 *
 * <p>Thread-safe: one lock per tree (the root's). The descriptions of reservations are taken under it and called
 * outside it, so they may be computed from state guarded by other locks.
 */
public final class MemoryBudget implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(MemoryBudget.class.getName());

    private final MemoryBudget parent;
    private final Object lock;
    private final String name;
    private final String limitKey;
    private final long limit;
    /** Bytes reserved here and in the children; guarded by {@link #lock}. */
    private long held;

    private final Set<Reservation> reservations = new LinkedHashSet<>();
    private final List<MemoryBudget> children = new ArrayList<>();
    private boolean closed;

    private MemoryBudget(MemoryBudget parent, String name, String limitKey, long limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("limit " + limit + " < 0");
        }
        this.parent = parent;
        this.lock = parent == null ? new Object() : parent.lock;
        this.name = Objects.requireNonNull(name, "name");
        this.limitKey = Objects.requireNonNull(limitKey, "limitKey");
        this.limit = limit;
    }

    /**
     * A root budget: {@code name} says whose and which memory ("host memory of this Viper instance"), {@code limitKey}
     * is the setting that gave {@code limit}, for messages.
     */
    public static MemoryBudget root(String name, String limitKey, long limit) {
        return new MemoryBudget(null, name, limitKey, limit);
    }

    /** A child ("producer nt3") whose reservations count against this budget too. */
    public MemoryBudget child(String childName, String childLimitKey, long childLimit) {
        synchronized (lock) {
            if (closed) {
                throw new ViperClosedException(name + " is closed: no budget for " + childName);
            }
            MemoryBudget c = new MemoryBudget(this, childName, childLimitKey, childLimit);
            children.add(c);
            return c;
        }
    }

    public String name() {
        return name;
    }

    public long limit() {
        return limit;
    }

    /** Bytes reserved in this budget and its children. */
    public long held() {
        synchronized (lock) {
            return held;
        }
    }

    /** What a reservation may take now: the least room left on the way from here to the root. */
    public long headroom() {
        synchronized (lock) {
            long room = Long.MAX_VALUE;
            for (MemoryBudget b = this; b != null; b = b.parent) {
                room = Math.min(room, b.limit - b.held);
            }
            return Math.max(0, room);
        }
    }

    /** The most a reservation here could ever take: the smallest limit on the way to the root. */
    public long ceiling() {
        long c = Long.MAX_VALUE;
        for (MemoryBudget b = this; b != null; b = b.parent) {
            c = Math.min(c, b.limit);
        }
        return c;
    }

    /** The budget on the way to the root whose limit is {@link #ceiling()} (the nearest of equals), for messages. */
    public MemoryBudget tightest() {
        MemoryBudget t = this;
        for (MemoryBudget b = parent; b != null; b = b.parent) {
            if (b.limit < t.limit) {
                t = b;
            }
        }
        return t;
    }

    /** The setting that gave {@link #limit()}. */
    public String limitKey() {
        return limitKey;
    }

    /**
     * Reserves {@code bytes} here and in every ancestor, or returns null when one of them has no room for it now.
     * {@code what} names the buffer while it is held ("staged nt3 v4 (1048576 bytes)").
     *
     * @throws ViperClosedException when this budget is closed
     */
    public Reservation tryReserve(long bytes, Supplier<String> what) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes " + bytes + " < 0");
        }
        synchronized (lock) {
            if (closed) {
                throw new ViperClosedException(name + " is closed: cannot reserve " + size(bytes));
            }
            if (refuser(bytes) != null) {
                return null;
            }
            Reservation r = new Reservation(bytes, what);
            reservations.add(r);
            for (MemoryBudget b = this; b != null; b = b.parent) {
                b.held += bytes;
            }
            return r;
        }
    }

    /**
     * As {@link #tryReserve}, refusing with the exception {@link #refusal} describes.
     *
     * @throws ViperMemoryException when this budget or an ancestor has no room for {@code bytes}
     */
    public Reservation reserve(long bytes, Supplier<String> what) {
        Reservation r = tryReserve(bytes, what);
        if (r == null) {
            throw refusal(bytes, what.get());
        }
        return r;
    }

    /**
     * Why {@code bytes} for {@code what} do not fit now: the budget that has no room, its setting, and what each of its
     * holders holds.
     */
    public ViperMemoryException refusal(long bytes, String what) {
        MemoryBudget full;
        long room;
        synchronized (lock) {
            full = refuser(bytes);
            if (full == null) {
                full = this; // room came back meanwhile: say what is held here
            }
            room = full.limit - full.held;
        }
        String whose = full == this ? "its own budget" : full.name;
        return new ViperMemoryException(
                name + " asked for " + size(bytes) + " (" + what + ") but " + whose + " ("
                        + full.limitKey + " = " + size(full.limit) + ") has " + size(Math.max(0, room))
                        + " left; held: "
                        + full.describeHeld(),
                bytes);
    }

    /** Caller holds the lock: the nearest budget from here to the root without room for {@code bytes}, or null. */
    private MemoryBudget refuser(long bytes) {
        for (MemoryBudget b = this; b != null; b = b.parent) {
            if (bytes > b.limit - b.held) {
                return b;
            }
        }
        return null;
    }

    /**
     * What is held here, by whom: this budget's own reservations, then each child that holds anything, with its
     * reservations ("producer a: 2.0 MiB [staged a v1 (2097152 bytes)]"); "nothing" when nothing is.
     */
    public String describeHeld() {
        List<Holder> holders = new ArrayList<>();
        synchronized (lock) {
            collect(holders);
        }
        List<String> parts = new ArrayList<>();
        for (Holder h : holders) {
            List<String> items = new ArrayList<>();
            for (Reservation r : h.reservations()) {
                items.add(r.describe());
            }
            parts.add(h.name() + (h.closed() ? " (closed)" : "") + ": " + size(h.bytes()) + " " + items);
        }
        return parts.isEmpty() ? "nothing" : String.join("; ", parts);
    }

    private record Holder(String name, boolean closed, long bytes, List<Reservation> reservations) {}

    /** Caller holds the lock. */
    private void collect(List<Holder> out) {
        if (!reservations.isEmpty()) {
            long own = reservations.stream().mapToLong(Reservation::bytes).sum();
            out.add(new Holder(name, closed, own, List.copyOf(reservations)));
        }
        for (MemoryBudget c : children) {
            c.collect(out);
        }
    }

    /**
     * Closes this budget: no more reservations or children. Reservations still open (a buffer a lease still holds) are
     * named in a warning and keep counting, here and in the parent, until they close.
     */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            detachIfEmpty();
            if (held == 0) {
                return;
            }
        }
        LOG.log(System.Logger.Level.WARNING, "{0} closed while it holds {1}: {2}", name, size(held()), describeHeld());
    }

    /** Caller holds the lock: a closed budget that holds nothing leaves its parent's list. */
    private void detachIfEmpty() {
        if (closed && held == 0 && parent != null) {
            parent.children.remove(this);
        }
    }

    /** {@code n} bytes for a message: exact below 1 KiB, else in KiB, MiB or GiB with the exact count. */
    static String size(long n) {
        if (n < 1024) {
            return n + " bytes";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = n;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.1f %s (%d bytes)", v, units[u], n);
    }

    @Override
    public String toString() {
        return name + " (" + limitKey + " = " + size(limit) + ")";
    }

    /**
     * Bytes counted against a budget and its ancestors until {@link #close()}: held by whoever owns the memory it
     * stands for, closed when that memory is freed (any thread; idempotent).
     */
    public final class Reservation implements AutoCloseable {
        private final long bytes;
        private final Supplier<String> what;

        private Reservation(long bytes, Supplier<String> what) {
            this.bytes = bytes;
            this.what = Objects.requireNonNull(what, "what");
        }

        public long bytes() {
            return bytes;
        }

        private String describe() {
            try {
                return what.get();
            } catch (RuntimeException e) {
                return size(bytes) + " (undescribed: " + e + ")";
            }
        }

        /** Gives the bytes back to the budget and its ancestors. */
        @Override
        public void close() {
            synchronized (lock) {
                if (!reservations.remove(this)) {
                    return;
                }
                for (MemoryBudget b = MemoryBudget.this; b != null; b = b.parent) {
                    b.held -= bytes;
                }
                detachIfEmpty();
            }
        }

        @Override
        public String toString() {
            return describe();
        }
    }
}
