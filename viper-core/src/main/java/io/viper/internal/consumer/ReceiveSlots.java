package io.viper.internal.consumer;

import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import io.viper.hash.ContentHash;
import io.viper.internal.TensorHashes;
import io.viper.internal.memory.MemoryBudget;
import io.viper.manifest.Manifest;
import io.viper.spi.ReceiveAllocator;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

/**
 * A consumer's two host receive buffers (double buffering): one holds the serving model, the other receives the next
 * version. Together they stay within {@code viper.consumer.host.budget.bytes}, and with every other model of the
 * instance within {@code viper.memory.host.budget.bytes}: each buffer is reserved in the consumer's
 * {@link MemoryBudget} (a child of the instance's) while it exists. Their memory comes from the instance's
 * {@link ReceiveAllocator} (off-heap memory unless a process that shares received models, such as the viper agent,
 * installed its own).
 *
 * <p>Ownership and threads: the fetch thread {@link #claim claims} a slot and fills it; the slot comes back with
 * {@link Slot#release()}, called by whichever thread drops the last reference to the model in it (an inference thread
 * closing its lease, the fetch thread swapping in a newer version, or the fetch thread when the receive failed).
 * {@link #close()} runs on the thread that closes the consumer: a free buffer is freed at once, a claimed one when it
 * is released. Thread-safe.
 *
 * <p>A slot remembers the version whose verified bytes its memory holds ({@link Slot#verified}), so that the next load
 * into it can leave the blocks that did not change where they are. A claim hands what the slot remembers to the
 * claimant ({@link Slot#heldWhenClaimed}), which is about to write the memory, and forgets it; growing or freeing the
 * memory forgets it too. Only the claimant's {@link Slot#verified}, after a load that verified, sets it again.
 */
final class ReceiveSlots implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ReceiveSlots.class.getName());

    private final String model;
    private final MemoryBudget budget;
    private final long waitMs;
    private final ReceiveAllocator allocator;
    private final Object monitor = new Object();
    private final Slot[] slots = {new Slot(0), new Slot(1)};
    private boolean closed;

    /**
     * @param budgetBytes {@code viper.consumer.host.budget.bytes}
     * @param waitMs {@code viper.consumer.buffer.wait.ms}: how long {@link #claim} waits for a lease to close
     */
    ReceiveSlots(String model, long budgetBytes, long waitMs) {
        this(model, budgetBytes, waitMs, ReceiveAllocator.offHeap());
    }

    /** As above, with the buffers' memory from {@code allocator}. */
    ReceiveSlots(String model, long budgetBytes, long waitMs, ReceiveAllocator allocator) {
        this(
                model,
                MemoryBudget.root("consumer " + model, "viper.consumer.host.budget.bytes", budgetBytes),
                waitMs,
                allocator);
    }

    /**
     * As above, the buffers counted against {@code budget} (the consumer's child of the instance's), which
     * {@link #close()} closes.
     */
    ReceiveSlots(String model, MemoryBudget budget, long waitMs, ReceiveAllocator allocator) {
        this.model = model;
        this.budget = budget;
        this.waitMs = waitMs;
        this.allocator = allocator;
    }

    /**
     * Host memory the next version may take: the budget less the buffers that hold a model (the serving one, and one
     * still leased), and no more than the instance's budget has left. The free buffer does not count: it is reallocated
     * when the next version does not fit in it.
     */
    long freeBytes() {
        synchronized (monitor) {
            long idle = 0;
            for (Slot s : slots) {
                if (!s.busy) {
                    idle += s.memory == null ? 0 : s.memory.byteSize();
                }
            }
            return budget.headroom() + idle;
        }
    }

    /**
     * A slot no model uses, waiting up to {@code viper.consumer.buffer.wait.ms} for leases to close.
     *
     * @throws ViperTimeoutException when both stay held, or the consumer closed meanwhile
     */
    Slot claim() {
        Slot s = claimWithin(TimeUnit.MILLISECONDS.toNanos(waitMs));
        if (s == null) {
            throw new ViperTimeoutException(
                    "both receive buffers of " + model + " are held by open leases (waited " + waitMs + " ms)");
        }
        return s;
    }

    /**
     * Whether a slot no model uses is there now, so that {@link #claim} would not wait: for the notifier's thread,
     * which must not wait for inference threads to close their leases. Only the thread that claims (under the fetcher's
     * load lock) takes slots, so one free now stays free for it.
     */
    boolean freeNow() {
        synchronized (monitor) {
            for (Slot s : slots) {
                if (!s.busy) {
                    return true;
                }
            }
            return false;
        }
    }

    private Slot claimWithin(long waitNanos) {
        long deadline = System.nanoTime() + waitNanos;
        synchronized (monitor) {
            while (true) {
                for (Slot s : slots) {
                    if (!s.busy) {
                        s.busy = true;
                        s.heldWhenClaimed = s.holds;
                        s.holds = null;
                        return s;
                    }
                }
                long left = deadline - System.nanoTime();
                if (left <= 0 || closed) {
                    return null;
                }
                try {
                    monitor.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ViperException(ViperException.Reason.INTERNAL, "interrupted");
                }
            }
        }
    }

    /** Frees every buffer that is free now; the others are freed when released. */
    @Override
    public void close() {
        synchronized (monitor) {
            closed = true;
            for (Slot s : slots) {
                if (!s.busy) {
                    s.free();
                }
            }
            monitor.notifyAll();
        }
        budget.close(); // names the buffers leases still hold
    }

    /**
     * A verified version whose bytes a slot's memory holds, and the hash of every piece of it as its verification
     * computed them ({@link TensorHashes#pieces()}; null when not kept). The array is shared, not copied: nobody may
     * change it.
     */
    private record Held(Manifest version, ContentHash[] pieces) {}

    /** One receive buffer. Its memory is replaced only while the fetch thread holds the claim. */
    final class Slot {
        private final int index;
        private ReceiveAllocator.Buffer buffer;
        private MemorySegment memory;
        /** {@link #memory}'s bytes in the consumer's budget. */
        private MemoryBudget.Reservation reservation;

        private boolean busy;
        /** The version whose verified bytes the memory holds while no one may write it; null if unknown. */
        private Held holds;
        /** For the claimant: the version the memory held, verified, when it was claimed; null once rewritten. */
        private Held heldWhenClaimed;

        private Slot(int index) {
            this.index = index;
        }

        /**
         * The buffer, grown to {@code size} bytes if needed (only the claimant calls this).
         *
         * @throws io.viper.errors.ViperMemoryException when the consumer's or the instance's budget has no room for it
         */
        MemorySegment segment(long size) {
            synchronized (monitor) {
                if (memory == null || memory.byteSize() < size) {
                    free();
                    heldWhenClaimed = null;
                    reservation = reserve(Math.max(1, size));
                    try {
                        buffer = allocator.allocate(Math.max(1, size));
                    } catch (RuntimeException | Error e) {
                        reservation.close();
                        reservation = null;
                        throw e;
                    }
                    memory = buffer.segment();
                    LOG.log(
                            System.Logger.Level.DEBUG,
                            "consumer {0}: receive buffer {1} is {2} bytes",
                            model,
                            Long.toString(index),
                            Long.toString(size));
                }
                return memory.asSlice(0, size);
            }
        }

        /**
         * The version whose verified bytes this slot's memory still held when it was claimed, at the offsets of that
         * version's manifest, or null: none, or the memory was reallocated since ({@link #segment} grew it). The
         * claimant may leave blocks that the next version has at the same place unwritten; it still verifies every
         * byte.
         */
        Manifest heldWhenClaimed() {
            synchronized (monitor) {
                return heldWhenClaimed == null ? null : heldWhenClaimed.version();
            }
        }

        /**
         * The hash of every piece ({@link TensorHashes#pieces()}) of {@link #heldWhenClaimed()} as computed when it was
         * verified, or null: not kept, or the memory was reallocated since. Shared, not copied: nobody may change the
         * array.
         */
        ContentHash[] heldPiecesWhenClaimed() {
            synchronized (monitor) {
                return heldWhenClaimed == null ? null : heldWhenClaimed.pieces();
            }
        }

        /**
         * The claimant's word that the memory now holds {@code m}'s data section, verified; the next claim may reuse
         * it. Without this call, a released slot's content counts as unknown.
         */
        void verified(Manifest m) {
            verified(m, null);
        }

        /**
         * As {@link #verified(Manifest)}, with the hash of every piece of {@code m} that the verification computed (or
         * null), which the next claimant may take for bytes it leaves in place.
         */
        void verified(Manifest m, ContentHash[] pieces) {
            synchronized (monitor) {
                holds = new Held(m, pieces);
                heldWhenClaimed = null;
            }
        }

        /** Hands the slot back; after {@link ReceiveSlots#close()} its memory is freed. */
        void release() {
            synchronized (monitor) {
                busy = false;
                heldWhenClaimed = null;
                if (closed) {
                    free();
                }
                monitor.notifyAll();
            }
        }

        /**
         * Caller holds the monitor: a reservation, freeing the other idle buffer's memory first when that makes room.
         */
        private MemoryBudget.Reservation reserve(long bytes) {
            MemoryBudget.Reservation r = budget.tryReserve(bytes, this::toString);
            if (r != null) {
                return r;
            }
            for (Slot other : slots) {
                if (other != this && !other.busy) {
                    other.free();
                }
            }
            return budget.reserve(bytes, this::toString);
        }

        /** Caller holds the monitor. */
        private void free() {
            holds = null;
            if (buffer != null) {
                buffer.close();
                buffer = null;
                memory = null;
            }
            if (reservation != null) {
                reservation.close();
                reservation = null;
            }
        }

        /** Called for messages, maybe without the monitor: reads one field once. */
        @Override
        public String toString() {
            MemoryBudget.Reservation r = reservation;
            return "receive buffer " + index + " of " + model + (r == null ? "" : " (" + r.bytes() + " bytes)");
        }
    }
}
