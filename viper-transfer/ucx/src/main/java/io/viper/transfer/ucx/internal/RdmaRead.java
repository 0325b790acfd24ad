package io.viper.transfer.ucx.internal;

import io.viper.errors.RetriableViperException;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperException;
import io.viper.spi.TransportClient.Arrivals;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.openucx.jucx.UcxCallback;
import org.openucx.jucx.ucp.UcpRequest;

/**
 * One read's RDMA GETs, from the memory a producer's GRANT exposes into the reader's destination, or, where UCX mapped
 * that memory here (a producer on this host, {@link RkeyPointer}), the reader's copy from it. Threads: the
 * {@link WorkerLoop}'s thread drives the GETs ({@link #start}, the completions, {@link #endMapped}, {@link #abandon});
 * the reading thread copies mapped memory ({@link #copyMapped}) and, when it gives up, {@link #abandonAndWait}s.
 * {@link #done} completes on the loop thread when no GET is in flight any more.
 */
final class RdmaRead {
    private static final System.Logger LOG = System.getLogger(UcxClient.class.getName());
    private static final long ABORT_GRACE_MS = 2_000;
    /**
     * Most bytes one copy from a producer's mapped memory moves. The reader's copy ({@link Arrivals#copy}) spreads each
     * call over its threads, which meet at the call's end: in one process here, 1 GiB copied and checked in calls of 8
     * MiB took 85 ms, in calls of 64 MiB 76 ms. The deadline is checked between calls, every few milliseconds.
     */
    static final long MAPPED_COPY_BYTES = 64L << 20;

    private final UcxPeers peers;
    private final WorkerLoop loop;
    private final UcxSettings settings;
    /**
     * Whether memory UCX mapped here is copied by the reader rather than read by GETs (host mode, viper.ucx.mapped).
     */
    private final boolean mayMap;

    private final String peer;
    private final ControlProtocol.Grant grant;
    private final ReadPlan plan;
    private final Arrivals arrivals;
    private final Runnable wake;
    /** Completes, on the loop thread, when no GET is in flight any more: exceptionally when one failed. */
    final CompletableFuture<Void> done = new CompletableFuture<>();
    /** The producer's memory mapped here ({@link RkeyPointer}), set by {@link #start}; 0: the GETs move the bytes. */
    volatile long mappedAt;

    // Loop thread only.
    private UcxPeers.Peer target;
    private UcxPeers.RemoteKey rkey;
    private int next;
    private int inFlight;
    private boolean aborted;
    private boolean pumping;
    private boolean busy;
    private boolean finished;
    private String failure;

    /**
     * The read of {@code plan} from the memory {@code grant} exposes, through {@code peers}' endpoints driven by
     * {@code loop}; {@code wake} wakes the reading thread (the transfer ended, or the memory is mapped here).
     */
    RdmaRead(
            UcxPeers peers,
            WorkerLoop loop,
            UcxSettings settings,
            boolean mayMap,
            String peer,
            ControlProtocol.Grant grant,
            ReadPlan plan,
            Arrivals arrivals,
            Runnable wake) {
        this.peers = peers;
        this.loop = loop;
        this.settings = settings;
        this.mayMap = mayMap;
        this.peer = peer;
        this.grant = grant;
        this.plan = plan;
        this.arrivals = arrivals;
        this.wake = wake;
    }

    /** GET {@code index}'s completion; counts once even if jucx reports it twice. */
    private final class Get extends UcxCallback {
        final int index;
        boolean completed;

        Get(int index) {
            this.index = index;
        }

        @Override
        public void onSuccess(UcpRequest request) {
            complete(null);
        }

        @Override
        public void onError(int status, String message) {
            complete("RDMA read failed (UCS status " + status + "): " + message);
        }

        void complete(String error) {
            if (completed) {
                return;
            }
            completed = true;
            inFlight--;
            if (error != null) {
                fail(error);
            } else if (!aborted) {
                try {
                    arrivals.arrived(plan.destinationOffset()[index], plan.length()[index]);
                } catch (RuntimeException e) {
                    fail("the reader's arrival callback failed: " + e);
                }
            }
            pump();
        }
    }

    void start() {
        try {
            target = peers.acquire(grant.workerAddress()); // throws once the client closed
            rkey = peers.remoteKey(target, grant);
            if (mayMap && plan.count() > 0) {
                long at = RkeyPointer.localAddress(rkey.key, grant.address());
                if (at != 0) {
                    mappedAt = at; // the reader copies; endMapped() ends the transfer
                    wake.run();
                    return;
                }
            }
            loop.busyBegin();
            busy = true;
        } catch (RuntimeException e) {
            fail("cannot reach the producer's UCX worker: " + UcxNative.oneLine(String.valueOf(e.getMessage())));
        }
        pump();
    }

    /** The reader copied every chunk from the mapped memory: releases the key and the endpoint. */
    void endMapped() {
        if (!finished) {
            finish();
        }
    }

    void pump() {
        if (pumping || finished) {
            return;
        }
        pumping = true;
        try {
            while (!aborted && inFlight < settings.inFlight() && next < plan.count()) {
                int i = next++;
                Get cb = new Get(i);
                inFlight++;
                try {
                    target.endpoint.getNonBlocking(
                            grant.address() + plan.remoteOffset()[i],
                            rkey.key,
                            plan.localAddress()[i],
                            plan.length()[i],
                            cb);
                } catch (RuntimeException e) {
                    cb.complete("RDMA read failed: " + UcxNative.oneLine(String.valueOf(e.getMessage())));
                }
            }
        } finally {
            pumping = false;
        }
        if (inFlight == 0 && (aborted || next == plan.count())) {
            finish();
        }
    }

    void fail(String why) {
        if (failure == null) {
            failure = why;
        }
        aborted = true;
    }

    void abort(String why) {
        if (!done.isDone()) {
            fail(why);
            pump();
        }
    }

    /**
     * Gives up on GETs that did not complete after an abort (UCX cannot cancel RMA, and without peer error handling it
     * cannot force-close the endpoint): stops busy-polling for them and takes the endpoint out of the cache. Their
     * completions, if they come, are still counted.
     */
    void abandon() {
        if (finished) {
            return;
        }
        if (target != null) {
            peers.evict(target);
        }
        if (busy) {
            busy = false;
            loop.busyEnd();
        }
    }

    private void finish() {
        finished = true;
        if (target != null) {
            if (rkey != null) {
                peers.releaseKey(target, rkey);
                rkey = null;
            }
            target.users--;
            if (failure != null) {
                peers.evict(target);
            }
            peers.closeIfIdle(target);
        }
        if (busy) {
            busy = false;
            loop.busyEnd();
        }
        if (failure == null) {
            done.complete(null);
        } else {
            done.completeExceptionally(
                    new RetriableViperException(ViperException.Reason.TRANSFER, peer + ": " + failure));
        }
        try {
            wake.run();
        } catch (RuntimeException | Error e) {
            LOG.log(Level.DEBUG, "ucx client: waking a reader failed", e);
        }
    }

    /**
     * The read of a producer on this host whose memory UCX mapped here ({@link RkeyPointer}): copies every chunk of the
     * plan straight from it with the reader's {@link Arrivals#copy} (the calling thread, and the threads a verifier
     * adds to copy and check at once), consecutive chunks together up to {@link #MAPPED_COPY_BYTES}. The key and the
     * lease stay held until the transfer ends, so the memory stays mapped and the producer's. As for GETs, only a
     * trusted producer's grant gets here ({@link ProducerTrust}): its address and size are taken as they are.
     */
    void copyMapped(long deadline) {
        MemorySegment remote = MemorySegment.ofAddress(mappedAt).reinterpret(grant.size());
        int i = 0;
        while (i < plan.count()) {
            if (System.nanoTime() - deadline > 0) {
                throw new RetriableViperException(
                        ViperException.Reason.TRANSFER, peer + ": reading mapped memory timed out");
            }
            int j = i + 1;
            long len = plan.length()[i];
            while (j < plan.count()
                    && len + plan.length()[j] <= MAPPED_COPY_BYTES
                    && plan.remoteOffset()[j] == plan.remoteOffset()[i] + len
                    && plan.localAddress()[j] == plan.localAddress()[i] + len) {
                len += plan.length()[j];
                j++;
            }
            try {
                // The reader's copy: a verifier checks each piece as it copies it.
                arrivals.copy(
                        remote.asSlice(plan.remoteOffset()[i], len),
                        MemorySegment.ofAddress(plan.localAddress()[i]).reinterpret(len),
                        plan.destinationOffset()[i]);
            } catch (RuntimeException e) {
                throw new RetriableViperException(
                        ViperException.Reason.TRANSFER, peer + ": the reader's copy failed: " + e);
            }
            i = j;
        }
    }

    /**
     * Stops issuing GETs and waits for those in flight, so that nothing writes into the caller's destination after
     * {@code read} returns. GETs complete on their own once issued (shared memory copies, RDMA); those that do not
     * within a grace period are abandoned and logged.
     */
    void abandonAndWait() {
        if (awaitAfter(() -> abort("read abandoned"))) {
            return;
        }
        try {
            loop.execute(this::abandon);
        } catch (ViperClosedException closedLoop) {
            // The loop is closing and takes the endpoints with it.
        }
        LOG.log(
                Level.ERROR,
                peer + ": RDMA reads still outstanding " + ABORT_GRACE_MS
                        + " ms after an abandoned read; its destination may still be written");
    }

    private boolean awaitAfter(Runnable action) {
        try {
            loop.execute(action);
        } catch (ViperClosedException closedLoop) {
            // The loop is closing: its cleanup force-closes every endpoint.
        }
        try {
            done.get(ABORT_GRACE_MS, TimeUnit.MILLISECONDS);
            return true;
        } catch (ExecutionException e) {
            return true;
        } catch (TimeoutException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return done.isDone();
        }
    }
}
