package io.viper.internal.producer;

import io.viper.PublishHandle;
import io.viper.ViperConfig;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import io.viper.hash.ContentHash;
import io.viper.internal.TensorHashes;
import io.viper.internal.ViperRuntime;
import io.viper.manifest.BlockList;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.Notifier;
import io.viper.spi.PendingStore;
import io.viper.spi.ReadLease;
import io.viper.spi.TransportServer;
import io.viper.tensor.TensorInfo;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.SequencedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Publishing after the training thread's {@link Stager}, on one route ({@link #publish}): per staged version, in order,
 * (1) completes the host copy of a GPU-staged version, (2) finishes hashing every tensor and every block's id (what the
 * copy started; plus phash64 where a GPU transport serves), (3) exposes the buffer on every transport, (4) announces
 * the manifest on the notifier (with the bytes of a version of at most {@code viper.producer.inline.bytes}), then, once
 * the notifier accepted it, withdraws the versions it retired, (5) flushes it to the PFS (its {@link PendingStore},
 * begun by the stager, which wrote its blocks as they were hashed) and (6) announces again with the {@code file://}
 * location. A failure before the announcement gives the buffer back, once the pending store stopped reading it; the
 * {@link PublishHandle}'s futures say what happened.
 *
 * <p>Which thread runs the route is the one choice {@link #submit} makes. Normally the producer's own thread, one per
 * producer, so that versions are announced in the order they were staged. A version announced with its bytes (at most
 * {@code viper.producer.inline.bytes}) while that thread has nothing queued or running, with no PFS flush to follow and
 * a notifier that answers in process ({@link Notifier#publishesLocally()}), takes the route on the training thread
 * instead, and step 4 hands the announcement to the broker in this process, whose answer completes the rest: hashing a
 * few KiB costs less than waking another thread, which on a machine with idle cores costs tens of microseconds, the
 * larger part of such an update's latency. Order still holds, because {@link #submit} is called by one thread at a time
 * and the check sees every version handed to the thread until it went through. {@link Withdrawals} withdraws buffers
 * from the transports once the {@link StagingCache} retired them and their last read lease closed.
 */
final class PublishPipeline implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(PublishPipeline.class.getName());

    private final String model;
    private final ViperRuntime rt;
    private final List<TransportServer> servers;
    private final Notifier notifier;
    private final Optional<CheckpointRepository> repository;
    private final StagingCache cache;
    private final GpuStaging gpu;
    /** Whether a GPU transport serves: then manifests carry phash64 for on-device verification. */
    private final boolean gpuServed;

    private final ExecutorService thread;
    private final Withdrawals withdrawals;
    /** {@code viper.producer.inline.bytes}: versions up to this size are announced with their bytes. */
    private final long inlineBytes;
    /** Versions handed to {@link #thread} that have not gone through it yet (and flushes waiting on it). */
    private final AtomicInteger queued = new AtomicInteger();
    /**
     * Completes once the broker answered the last version announced from the training thread (and its futures
     * completed).
     */
    private volatile CompletableFuture<Void> lastFromCaller = CompletableFuture.completedFuture(null);

    /** @param withdrawals the cache's retire callback's target, which this pipeline closes when it closes */
    PublishPipeline(
            String model,
            ViperRuntime rt,
            List<TransportServer> servers,
            Notifier notifier,
            Optional<CheckpointRepository> repository,
            StagingCache cache,
            GpuStaging gpu,
            Withdrawals withdrawals) {
        this.model = model;
        this.rt = rt;
        this.servers = servers;
        this.notifier = notifier;
        this.repository = repository;
        this.cache = cache;
        this.gpu = gpu;
        this.gpuServed = servers.stream().anyMatch(s -> s.location().tier() == Tier.GPU);
        this.inlineBytes = rt.config().get(ViperConfig.PRODUCER_INLINE_BYTES);
        this.thread = Executors.newSingleThreadExecutor(r ->
                Thread.ofPlatform().daemon().name("viper-producer-" + model).unstarted(r));
        this.withdrawals = withdrawals;
    }

    /**
     * Training thread, one call at a time: queues {@code staged} for the producer's thread and returns at once with the
     * futures of its announcement and flush; or, for a small version while nothing is queued, takes the route here (see
     * the class comment), and the stall includes that.
     */
    PublishHandle submit(
            Stager.Staged staged, SequencedMap<String, String> metadata, long publishedAtMicros, long stallNanos) {
        CompletableFuture<Manifest> announced = new CompletableFuture<>();
        CompletableFuture<Manifest> durable = new CompletableFuture<>();
        long stall = stallNanos;
        if (announcesOnCaller(staged)) {
            long t0 = System.nanoTime();
            publish(staged, metadata, publishedAtMicros, announced, durable, true);
            stall += System.nanoTime() - t0;
        } else {
            queued.incrementAndGet();
            try {
                thread.execute(() -> {
                    try {
                        publish(staged, metadata, publishedAtMicros, announced, durable, false);
                    } finally {
                        queued.decrementAndGet();
                    }
                });
            } catch (RejectedExecutionException e) {
                queued.decrementAndGet();
                if (staged.pfs() != null) {
                    staged.pfs().close();
                }
                throw e;
            }
        }
        return new PublishHandle(
                model,
                staged.version(),
                stall,
                announced,
                durable,
                staged.copied().copiedBytes(),
                staged.copied().unchangedBytes());
    }

    /**
     * Whether {@code staged} is announced with its bytes, nothing is ahead of it, no PFS flush follows, and the
     * notifier answers without waiting on a network.
     */
    private boolean announcesOnCaller(Stager.Staged staged) {
        if (!notifier.publishesLocally() || repository.isPresent() || servers.isEmpty() || queued.get() > 0) {
            return false;
        }
        long total = 0;
        for (TensorInfo t : staged.infos()) {
            total += t.length();
        }
        return total <= inlineBytes;
    }

    /**
     * The route of one version: steps 1 to 3 ({@link #prepare}), 4 ({@link #announce}) and, once the notifier accepted
     * the announcement, the retired versions withdrawn and steps 5 and 6. With {@code onCaller} (the training thread)
     * step 4 hands the announcement to the broker in this process, and what follows runs on its thread when it answers
     * ({@link #lastFromCaller} completes then); else all runs here, in order.
     */
    private void publish(
            Stager.Staged staged,
            SequencedMap<String, String> metadata,
            long publishedAtMicros,
            CompletableFuture<Manifest> announced,
            CompletableFuture<Manifest> durable,
            boolean onCaller) {
        Prepared p = prepare(staged, metadata, publishedAtMicros, announced, durable);
        if (p == null) {
            return;
        }
        PendingStore pfs = staged.pfs();
        // With no transport, only the PFS flush announces.
        CompletableFuture<Void> accepted = servers.isEmpty() && repository.isPresent()
                ? CompletableFuture.completedFuture(null)
                : announce(p.manifest(), p.buffer(), announced, onCaller);
        CompletableFuture<Void> through = accepted.thenRun(() -> {
            cache.withdraw(p.retired()); // older versions leave the transports once this one is announced
            if (repository.isEmpty()) {
                durable.complete(p.manifest());
            } else {
                flushToPfs(p.manifest(), p.buffer(), pfs, announced, durable);
            }
        });
        if (pfs != null) {
            // stored or not (the announcement failed), what it wrote early and did not store goes
            through.whenComplete((done, failed) -> pfs.close());
        }
        if (onCaller) {
            lastFromCaller = through;
        }
    }

    /** A version through steps 1 to 3: its manifest with the transports' locations, and the buffers it retired. */
    private record Prepared(Manifest manifest, StagingBuffer buffer, List<StagingBuffer> retired) {}

    /** Steps 1 to 3; null when they failed: then the buffer went back and the futures say why. */
    private Prepared prepare(
            Stager.Staged staged,
            SequencedMap<String, String> metadata,
            long publishedAtMicros,
            CompletableFuture<Manifest> announced,
            CompletableFuture<Manifest> durable) {
        StagingBuffer buffer = staged.buffer();
        List<StagingBuffer> retired = List.of();
        try (TensorHashes hashes = staged.hashes();
                BlockIds blocks = staged.blocks()) {
            staged.hostCopy().run(); // step 1
            Manifest manifest = new Manifest(
                    model, staged.version(), rt.producerId(), publishedAtMicros, metadata, hash(staged), List.of());
            buffer.manifest(manifest);
            retired = cache.activate(
                    buffer, staged.content()); // the hashes are complete: a later version may compare with it
            return new Prepared(expose(manifest, buffer), buffer, retired);
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.ERROR,
                    "producer " + model + " v" + staged.version() + ": staging failed: " + e.getMessage(),
                    e);
            if (staged.pfs() != null) {
                staged.pfs().close(); // before the buffer goes back: it waits for the writes reading it
            }
            cache.abandon(buffer);
            cache.withdraw(retired);
            announced.completeExceptionally(e);
            durable.completeExceptionally(e);
            return null;
        }
    }

    /**
     * Step 2: the manifest's entries, with the hashes and block ids started as the copy ended (the rest is hashed
     * here).
     */
    private List<TensorEntry> hash(Stager.Staged staged) {
        List<TensorInfo> infos = staged.infos();
        List<Future<Long>> phashes = gpuServed ? gpu.phash64(staged.buffer(), infos, rt.hashPool()) : List.of();
        ContentHash[] hashes = staged.hashes().await();
        List<BlockList> blocks = staged.blocks().await();
        List<TensorEntry> entries = new ArrayList<>(infos.size());
        for (int i = 0; i < infos.size(); i++) {
            entries.add(new TensorEntry(
                    infos.get(i),
                    hashes[i],
                    gpuServed ? OptionalLong.of(join(phashes.get(i))) : OptionalLong.empty(),
                    blocks.get(i)));
        }
        return entries;
    }

    /** Step 3: serves the buffer (activated) on every transport; returns the manifest with their locations. */
    private Manifest expose(Manifest manifest, StagingBuffer buffer) {
        List<Location> locations = new ArrayList<>();
        for (TransportServer s : servers) {
            s.expose(buffer);
            locations.add(s.location());
        }
        return manifest.replaceLocations(locations);
    }

    /**
     * Step 4: tells consumers where to read the version, with its bytes when it is small enough. On the producer's
     * thread the notifier accepts it before this returns; {@code onCaller}, the broker in this process takes it and
     * answers later. The result completes once it answered and {@code announced} is completed (with the failure, if
     * any).
     */
    private CompletableFuture<Void> announce(
            Manifest manifest, StagingBuffer buffer, CompletableFuture<Manifest> announced, boolean onCaller) {
        CompletableFuture<Void> accepted;
        try {
            // Small: the bytes ride along, and consumers swap without a round trip to fetch them.
            MemorySegment data = manifest.totalBytes() <= inlineBytes ? dataOf(manifest, buffer) : null;
            if (onCaller) {
                accepted = notifier.publishLocally(manifest, data);
            } else {
                if (data != null) {
                    notifier.publish(manifest, data);
                } else {
                    notifier.publish(manifest);
                }
                accepted = CompletableFuture.completedFuture(null);
            }
        } catch (RuntimeException e) {
            accepted = CompletableFuture.failedFuture(e);
        }
        return accepted.handle((ok, failure) -> {
            boolean wrapped = failure instanceof CompletionException && failure.getCause() != null;
            announced(manifest, wrapped ? failure.getCause() : failure, announced);
            return null;
        });
    }

    /** The version's bytes in its staging buffer, as an announcement carries them. */
    private static MemorySegment dataOf(Manifest manifest, StagingBuffer buffer) {
        return buffer.data().asSlice(0, manifest.totalBytes());
    }

    /** Completes {@code announced} with {@code manifest}, counted, or with {@code failure} (null: none), logged. */
    private void announced(Manifest manifest, Throwable failure, CompletableFuture<Manifest> announced) {
        if (failure == null) {
            rt.metrics().published(model);
            announced.complete(manifest);
        } else {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "producer {0} v{1}: announcing failed: {2}",
                    model,
                    Long.toString(manifest.version()),
                    failure.getMessage());
            announced.completeExceptionally(failure);
        }
    }

    /** Steps 5 and 6: stores the version in the PFS and announces it with its file:// location. */
    private void flushToPfs(
            Manifest manifest,
            StagingBuffer buffer,
            PendingStore pfs,
            CompletableFuture<Manifest> announced,
            CompletableFuture<Manifest> durable) {
        try (ReadLease lease = buffer.internalLease()) {
            Location file = pfs.store(manifest, buffer);
            Manifest withFile = manifest.withLocations(List.of(file));
            notifier.publish(withFile);
            if (!announced.isDone()) {
                rt.metrics().published(model);
                announced.complete(withFile);
            }
            durable.complete(withFile);
        } catch (RuntimeException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "producer {0} v{1}: PFS flush failed: {2}",
                    model,
                    Long.toString(manifest.version()),
                    e.getMessage());
            announced.completeExceptionally(e);
            durable.completeExceptionally(e);
        }
    }

    private static <T> T join(Future<T> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ViperException(ViperException.Reason.INTERNAL, "interrupted while hashing");
        } catch (ExecutionException e) {
            throw new ViperException(ViperException.Reason.INTERNAL, "hashing failed: " + e.getCause(), e.getCause());
        }
    }

    /**
     * Blocks until every version queued so far went through the pipeline, and the broker answered the last one
     * announced from the training thread (up to 60 s).
     */
    void flush() {
        try {
            thread.submit(() -> {}).get();
            lastFromCaller.get(60, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new ViperTimeoutException(
                    "producer " + model + ": the broker did not answer the last announcement within 60 s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ViperException(ViperException.Reason.INTERNAL, "interrupted while flushing producer " + model);
        } catch (ExecutionException | RejectedExecutionException e) {
            throw new ViperClosedException("producer " + model + " is closed");
        }
    }

    /**
     * Finishes the versions queued (up to 60 s) and the withdrawals, then withdraws every staged version from the
     * transports.
     */
    @Override
    public void close() {
        thread.shutdown();
        try {
            lastFromCaller.get(
                    60,
                    TimeUnit.SECONDS); // the last small version's announcement, before its buffer leaves the transports
        } catch (TimeoutException | ExecutionException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "producer {0}: the broker did not answer the last announcement: {1}",
                    model,
                    e.toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            if (!thread.awaitTermination(60, TimeUnit.SECONDS)) {
                LOG.log(System.Logger.Level.WARNING, "producer {0}: background work did not finish in 60 s", model);
                thread.shutdownNow();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        withdrawals.close();
        for (StagingBuffer b : cache.staged()) {
            // The staging is freed next whatever happens: a failure only matters when debugging.
            withdrawals.now(b, System.Logger.Level.DEBUG);
        }
    }
}
