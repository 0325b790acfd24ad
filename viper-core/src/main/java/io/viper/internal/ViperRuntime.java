package io.viper.internal;

import io.viper.ViperConfig;
import io.viper.errors.ViperClosedException;
import io.viper.errors.ViperConfigException;
import io.viper.internal.memory.MemoryBudget;
import io.viper.internal.producer.FleetTracker;
import io.viper.manifest.Tier;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.spi.Providers;
import io.viper.spi.ReceiveAllocator;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import java.net.InetAddress;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Everything one {@code Viper} instance shares between its producers and consumers: the notifier, transport servers
 * (opened on the first producer) and clients (on the first consumer), the PFS repository, the hashing pool, and the
 * memory budgets its models' buffers count against (one for host memory, one for GPU memory, each with a child per
 * model). Opened lazily, closed in reverse order of opening. Thread-safe (synchronized lazy initialisation).
 */
public final class ViperRuntime implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ViperRuntime.class.getName());

    private final ViperConfig config;
    private final ViperMetrics metrics;
    private final ReceiveAllocator receiveAllocator;
    private final String producerId;
    private final ExecutorService hashPool;
    private final MemoryBudget hostMemory;
    private final MemoryBudget gpuMemory;
    private final List<AutoCloseable> opened = new ArrayList<>();
    private Notifier notifier;
    private NotifierProvider.Role notifierRole;
    private List<TransportServer> servers;
    private List<TransportServer> relays;
    private final FleetTracker tracker;
    private final Map<String, TransportClient> clients = new LinkedHashMap<>();
    private Optional<CheckpointRepository> repository;
    private boolean closed;

    public ViperRuntime(ViperConfig config, ViperMetrics metrics) {
        this(config, metrics, ReceiveAllocator.offHeap());
    }

    /** As above, with consumers' host receive buffers from {@code receiveAllocator}. */
    public ViperRuntime(ViperConfig config, ViperMetrics metrics, ReceiveAllocator receiveAllocator) {
        this.config = config;
        this.metrics = metrics;
        this.receiveAllocator = receiveAllocator;
        String id = config.get(ViperConfig.PRODUCER_ID);
        this.producerId = id.isEmpty() ? defaultProducerId() : id;
        AtomicInteger n = new AtomicInteger();
        this.hashPool = Executors.newFixedThreadPool(
                config.get(ViperConfig.HASH_THREADS),
                r -> Thread.ofPlatform()
                        .daemon()
                        .name("viper-hash-" + n.incrementAndGet())
                        .unstarted(r));
        this.hostMemory = MemoryBudget.root(
                "host memory of this Viper instance",
                ViperConfig.MEMORY_HOST_BUDGET.name(),
                config.get(ViperConfig.MEMORY_HOST_BUDGET));
        this.gpuMemory = MemoryBudget.root(
                "GPU memory of this Viper instance",
                ViperConfig.MEMORY_GPU_BUDGET.name(),
                config.get(ViperConfig.MEMORY_GPU_BUDGET));
        this.tracker = new FleetTracker(config.get(ViperConfig.FLEET_READERS_PER_SOURCE), (model, relay) -> {
            LOG.log(System.Logger.Level.WARNING, "tracker: relay {0} dropped as a source of {1}", relay, model);
            metrics.relayDropped(model);
        });
    }

    private static String defaultProducerId() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (Exception e) {
            host = "localhost";
        }
        return host + ":" + ProcessHandle.current().pid();
    }

    public ViperConfig config() {
        return config;
    }

    public ViperMetrics metrics() {
        return metrics;
    }

    /** Where consumers' host receive buffers come from. */
    public ReceiveAllocator receiveAllocator() {
        return receiveAllocator;
    }

    /** The instance's host memory budget: producers' staging and consumers' receive buffers, a child per model. */
    public MemoryBudget hostMemory() {
        return hostMemory;
    }

    /** The instance's GPU memory budget: consumers' received versions, a child per model. */
    public MemoryBudget gpuMemory() {
        return gpuMemory;
    }

    public String producerId() {
        return producerId;
    }

    public ExecutorService hashPool() {
        return hashPool;
    }

    /**
     * How many pool threads hash one model at once while its bytes are still being copied or received: one core fewer
     * than the machine has (the copy or the transfer runs on one), at least one.
     */
    public int hashWorkers() {
        return Math.max(
                1,
                Math.min(
                        config.get(ViperConfig.HASH_THREADS),
                        Runtime.getRuntime().availableProcessors() - 1));
    }

    /** See {@link io.viper.Viper#checkSettings()}. */
    public void checkSettings() {
        URI uri = config.get(ViperConfig.NOTIFIER);
        Providers.notifier(uri.getScheme()).check(uri, config);
        repository();
    }

    /**
     * The notifier, opened for {@code role} on first use. A producer-role notifier also serves this instance's
     * consumers (so one process can host the embedded broker and follow it).
     */
    public synchronized Notifier notifier(NotifierProvider.Role role) {
        ensureOpen();
        if (notifier != null && (notifierRole == NotifierProvider.Role.PRODUCER || role == notifierRole)) {
            return notifier;
        }
        URI uri = config.get(ViperConfig.NOTIFIER);
        if (notifier != null) {
            // A consumer-role notifier is open; a producer needs its own (it may host the broker).
            uri = notifier.uri();
        } else if (role == NotifierProvider.Role.CONSUMER
                && "embedded".equalsIgnoreCase(uri.getScheme())
                && uri.getPort() == 0) {
            throw new ViperConfigException(
                    "viper.notifier " + uri + " has no port: a consumer must be given the producer's broker address "
                            + "(embedded://host:PORT, printed by the producer or set with a fixed port)");
        }
        Notifier n = Providers.notifier(uri.getScheme()).open(uri, role, config);
        opened.add(n);
        if (notifier == null || role == NotifierProvider.Role.PRODUCER) {
            notifier = n;
            notifierRole = role;
        }
        return n;
    }

    /** The resolved notifier URI if a notifier is open, else the configured one. */
    public synchronized URI notifierUri() {
        return notifier != null ? notifier.uri() : config.get(ViperConfig.NOTIFIER);
    }

    /**
     * The transport servers of the producers, opened on first use; unavailable transports are skipped with a log line.
     */
    public synchronized List<TransportServer> servers() {
        ensureOpen();
        if (servers == null) {
            if (config.get(ViperConfig.TRANSPORTS).isEmpty()
                    && config.get(ViperConfig.PFS_ROOT).isEmpty()) {
                throw new ViperConfigException(
                        "viper.transports is empty and viper.pfs.root is not set: no consumer could reach a published"
                                + " model");
            }
            List<TransportServer> list = new ArrayList<>();
            List<String> skipped = new ArrayList<>();
            for (URI bind : config.get(ViperConfig.TRANSPORTS)) {
                String scheme = bind.getScheme().toLowerCase(Locale.ROOT);
                if (scheme.equals("file")) {
                    throw new ViperConfigException(
                            "viper.transports: file:// is not a serving transport; set viper.pfs.root for the PFS");
                }
                Optional<TransportProvider> found = Providers.transport(scheme);
                Optional<String> why = found.isEmpty()
                        ? Optional.of("no " + scheme + ":// transport installed")
                        : found.get().unavailableReason();
                if (why.isPresent()) {
                    // The default lists the GPU transports too: on a machine without CUDA that is expected, not news.
                    boolean explicit = config.originals().containsKey(ViperConfig.TRANSPORTS.name());
                    LOG.log(
                            explicit ? System.Logger.Level.INFO : System.Logger.Level.DEBUG,
                            "{0} transport unavailable ({1}); producers serve without it",
                            scheme,
                            why.get());
                    skipped.add(scheme + ": " + why.get());
                    continue;
                }
                TransportProvider p = found.get();
                TransportServer s = p.openServer(bind, config);
                opened.add(s);
                s.track(tracker);
                list.add(s);
                LOG.log(System.Logger.Level.DEBUG, "serving staged checkpoints at {0}", s.location());
            }
            if (list.isEmpty()
                    && !skipped.isEmpty()
                    && config.get(ViperConfig.PFS_ROOT).isEmpty()) {
                throw new ViperConfigException("no usable transport in viper.transports (" + String.join("; ", skipped)
                        + ") and no viper.pfs.root to fall back to");
            }
            servers = List.copyOf(list);
        }
        return servers;
    }

    /**
     * The servers on which this instance's consumers relay what they verified
     * ({@code viper.consumer.relay.transports}), opened on first use; empty when none is configured. An unavailable
     * transport listed there is a configuration error: a relay the operator asked for does not go missing quietly.
     */
    public synchronized List<TransportServer> relayServers() {
        ensureOpen();
        if (relays == null) {
            List<TransportServer> list = new ArrayList<>();
            for (URI bind : config.get(ViperConfig.CONSUMER_RELAY_TRANSPORTS)) {
                String scheme = bind.getScheme().toLowerCase(Locale.ROOT);
                TransportProvider p = Providers.transport(scheme)
                        .orElseThrow(() -> new ViperConfigException(ViperConfig.CONSUMER_RELAY_TRANSPORTS.name()
                                + ": no " + scheme + ":// transport installed"));
                Optional<String> why = p.unavailableReason();
                if (why.isPresent() || p.tier() != Tier.HOST) {
                    throw new ViperConfigException(ViperConfig.CONSUMER_RELAY_TRANSPORTS.name() + ": " + scheme
                            + ":// cannot relay here (" + why.orElse("not a host-memory transport") + ")");
                }
                TransportServer s = p.openServer(bind, config);
                opened.add(s);
                list.add(s);
                LOG.log(System.Logger.Level.INFO, "relaying verified blocks at {0}", s.location());
            }
            relays = List.copyOf(list);
        }
        return relays;
    }

    /** The client for {@code scheme}, opened on first use, or empty if that transport is missing or unavailable. */
    public synchronized Optional<TransportClient> client(String scheme) {
        ensureOpen();
        TransportClient c = clients.get(scheme);
        if (c != null) {
            return Optional.of(c);
        }
        Optional<TransportProvider> p = Providers.transport(scheme);
        if (p.isEmpty() || p.get().unavailableReason().isPresent()) {
            return Optional.empty();
        }
        c = p.get().openClient(config);
        opened.add(c);
        clients.put(scheme, c);
        return Optional.of(c);
    }

    /** Why {@code scheme} cannot be used by consumers here, or empty when it can. */
    public Optional<String> clientUnavailable(String scheme) {
        Optional<TransportProvider> p = Providers.transport(scheme);
        if (p.isEmpty()) {
            return Optional.of("no " + scheme + ":// transport installed");
        }
        return p.get().unavailableReason();
    }

    /** The PFS repository if {@code viper.pfs.root} is set. */
    public synchronized Optional<CheckpointRepository> repository() {
        ensureOpen();
        if (repository == null) {
            repository = config.get(ViperConfig.PFS_ROOT).map(root -> {
                CheckpointRepository r = Providers.repository("file").open(root.toUri(), config);
                opened.add(r);
                return r;
            });
        }
        return repository;
    }

    private void ensureOpen() {
        if (closed) {
            throw new ViperClosedException("this Viper instance is closed");
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (int i = opened.size() - 1; i >= 0; i--) {
            try {
                opened.get(i).close();
            } catch (Exception e) {
                LOG.log(System.Logger.Level.WARNING, "closing " + opened.get(i) + " failed: " + e.getMessage());
            }
        }
        hashPool.shutdownNow();
        // After the producers and consumers closed theirs: names buffers still held (leases still open).
        hostMemory.close();
        gpuMemory.close();
    }
}
