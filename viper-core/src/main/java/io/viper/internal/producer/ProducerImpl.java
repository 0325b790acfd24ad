package io.viper.internal.producer;

import io.viper.CheckpointPolicy;
import io.viper.PublishHandle;
import io.viper.Snapshot;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.internal.CopyHelpers;
import io.viper.internal.ViperRuntime;
import io.viper.internal.memory.MemoryBudget;
import io.viper.manifest.Manifest;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.spi.TransportServer;
import io.viper.tensor.Checkpoint;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * The producer of one model: wires the two halves of publishing. On the training thread the {@link Stager} copies the
 * snapshot into a {@link StagingCache} buffer (with {@link GpuStaging} for GPU tensors): that copy is the training
 * stall. The {@link PublishPipeline}'s background thread then hashes, exposes on the transports, announces, and flushes
 * to the PFS (a small version with a broker in this process is announced on the training thread, within the stall).
 *
 * <p>Thread-safe: {@code step} and {@code publish} are synchronized (one training thread at a time).
 */
public final class ProducerImpl implements ViperProducer {
    private static final System.Logger LOG = System.getLogger(ProducerImpl.class.getName());

    private final ViperRuntime rt;
    private final String model;
    private final CheckpointPolicy policy;
    private final StagingCache cache;
    private final Stager stager;
    private final PublishPipeline pipeline;
    private final Runnable onClose;
    private long lastIteration = Long.MIN_VALUE;
    private long version;
    private volatile boolean closed;

    public ProducerImpl(ViperRuntime rt, String model, CheckpointPolicy policy, Runnable onClose) {
        this.rt = rt;
        this.model = Manifest.validateModelName(model);
        this.policy = Objects.requireNonNull(policy, "policy");
        this.onClose = onClose;
        ViperConfig c = rt.config();
        List<TransportServer> servers = rt.servers();
        Notifier notifier = rt.notifier(NotifierProvider.Role.PRODUCER);
        Optional<CheckpointRepository> repository = rt.repository();
        this.version = VersionStart.lastUsed(model, repository, notifier, System::currentTimeMillis);
        rt.metrics().producerOpened(model);
        MemoryBudget budget = rt.hostMemory()
                .child("producer " + model, ViperConfig.STAGING_BUDGET.name(), c.get(ViperConfig.STAGING_BUDGET));
        Withdrawals withdrawals = new Withdrawals(model, servers);
        this.cache = new StagingCache(
                model,
                budget,
                c.get(ViperConfig.STAGING_VERSIONS),
                c.get(ViperConfig.STAGING_WAIT_MS),
                withdrawals::later,
                servers.stream()
                        .flatMap(srv -> srv.stagingAllocator().stream())
                        .findFirst()
                        .orElse(null));
        cache.onServed(n -> rt.metrics().served(model, "producer", n));
        GpuStaging gpu = new GpuStaging(model);
        this.stager = new Stager(
                cache,
                rt.hashPool(),
                rt.hashWorkers(),
                c.get(ViperConfig.HASH_ALGORITHM),
                c.get(ViperConfig.BLOCK_BYTES),
                c.get(ViperConfig.STAGING_COMPARE),
                c.get(ViperConfig.BLOCK_SKIP_UNSHARED),
                gpu,
                new CopyHelpers(
                        rt.hashPool(), Math.min(c.get(ViperConfig.PRODUCER_COPY_THREADS) - 1, rt.hashWorkers())),
                repository);
        this.pipeline = new PublishPipeline(model, rt, servers, notifier, repository, cache, gpu, withdrawals);
        LOG.log(
                System.Logger.Level.INFO,
                "producer {0}: policy {1}, notifier {2}, transports {3}{4}",
                model,
                policy.describe(),
                notifier.uri(),
                servers.stream().map(s -> s.location().uri().toString()).toList(),
                repository.isPresent() ? ", PFS " + c.get(ViperConfig.PFS_ROOT).orElseThrow() : "");
    }

    @Override
    public String model() {
        return model;
    }

    @Override
    public synchronized Optional<PublishHandle> step(long iteration, double loss, Snapshot snapshot) {
        ensureOpen();
        if (iteration <= lastIteration) {
            throw new ViperConfigException(
                    "producer " + model + ": iteration " + iteration + " does not follow " + lastIteration);
        }
        lastIteration = iteration;
        if (!policy.shouldPublish(iteration, loss)) {
            return Optional.empty();
        }
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put(Checkpoint.META_ITERATION, Long.toString(iteration));
        meta.put(Checkpoint.META_LOSS, Double.toString(loss));
        return Optional.of(publish(snapshot, meta));
    }

    @Override
    public PublishHandle publish(Checkpoint checkpoint) {
        return publish(Snapshot.of(checkpoint), checkpoint.metadata());
    }

    @Override
    public synchronized PublishHandle publish(Snapshot snapshot, Map<String, String> metadata) {
        ensureOpen();
        // Checked before staging: a refusal after it would leave a buffer filled and a version number used.
        Objects.requireNonNull(snapshot, "snapshot");
        checkMetadata(metadata);
        if (version >= Manifest.MAX_VERSION) {
            throw new ViperConfigException("producer " + model + ": v" + version + " is the last version there is ("
                    + Manifest.MAX_VERSION + ")");
        }
        long publishedAtMicros = Manifest.nowMicros();
        // The stall counts everything the training thread waits for: describing the snapshot too.
        long t0 = System.nanoTime();
        Stager.Staged staged = stager.stage(snapshot, version + 1, metadata.keySet());
        long stall = System.nanoTime() - t0;
        version = staged.version();
        rt.metrics()
                .staged(model, staged.copied().copiedBytes(), staged.copied().unchangedBytes());
        LinkedHashMap<String, String> meta = new LinkedHashMap<>(metadata);
        meta.putAll(staged.aliases()); // tied weights, stored once: each second name maps to its tensor's
        meta.putIfAbsent(Checkpoint.META_PRODUCER, rt.producerId());
        meta.putIfAbsent(Checkpoint.META_WALL_TIME, Long.toString(Math.floorDiv(publishedAtMicros, 1_000L)));
        PublishHandle handle = pipeline.submit(staged, meta, publishedAtMicros, stall);
        rt.metrics().stall(model, handle.stallNanos()); // a small version announced here counts too
        return handle;
    }

    private void checkMetadata(Map<String, String> metadata) {
        Objects.requireNonNull(metadata, "metadata");
        metadata.forEach((k, v) -> {
            if (k == null || v == null) {
                throw new ViperConfigException(
                        "producer " + model + ": metadata keys and values must not be null (key " + k + ")");
            }
        });
    }

    @Override
    public synchronized long latestVersion() {
        return version;
    }

    @Override
    public void flush() {
        pipeline.flush();
    }

    private void ensureOpen() {
        if (closed) {
            throw new ViperClosedException("producer " + model + " is closed");
        }
    }

    /** Publishes what is queued, withdraws the staged versions from the transports, and frees the staging. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        pipeline.close();
        cache.close();
        onClose.run();
    }
}
