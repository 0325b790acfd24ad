package io.viper;

import io.viper.config.ConfigDef;
import io.viper.config.ConfigKey;
import io.viper.config.ConfigType;
import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import io.viper.hash.HashAlgorithm;
import io.viper.manifest.Manifest;
import io.viper.spi.Notifier;
import io.viper.spi.NotifierProvider;
import io.viper.spi.Providers;
import io.viper.spi.RepositoryProvider;
import io.viper.spi.TransportProvider;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Validated, immutable configuration of a {@link Viper} instance, in the style of Kafka's {@code ConfigDef}: every key
 * is declared once with its type, default, parser and doc. Core's keys are declared below; each transport, notifier and
 * repository provider declares its own ({@code configKeys()}), and {@link #keys()} is the union over the installed
 * ones.
 *
 * <p>A {@code viper.*} key that no declaration knows is refused, naming the nearest known key; every value, core or
 * plugin, is validated in {@link #of}. Keys under {@link #PASSTHROUGH_PREFIXES} ({@code kafka.*}) are passed as they
 * are to the plugin that owns them; any other key is refused. Thread-safe.
 */
public final class ViperConfig {
    private static final ConfigKey.Declarer CORE = ConfigKey.declaredBy("viper-core");
    private static final List<ConfigKey<?>> CORE_KEYS = new ArrayList<>();

    /** Prefixes of keys handed to a plugin as they are: Kafka client settings ({@code kafka.security.protocol}). */
    public static final List<String> PASSTHROUGH_PREFIXES = List.of("kafka.");

    public static final ConfigKey<URI> NOTIFIER = define(CORE.key(
            "viper.notifier",
            ConfigType.URI,
            "embedded://127.0.0.1:0",
            v -> ConfigValues.parseUri(v, "embedded://127.0.0.1:7800 or kafka://host:9092"),
            "Where manifests are announced: embedded://host:port (a broker the producer hosts; port 0 picks"
                    + " one) or kafka://host:port[,host:port][?topic=T]."));
    public static final ConfigKey<List<URI>> TRANSPORTS = define(CORE.key(
            "viper.transports",
            ConfigType.URI_LIST,
            "ucx://127.0.0.1:0,tcp://127.0.0.1:0,cuda-ipc://127.0.0.1:0,ucx-cuda://127.0.0.1:0,cuda-pipe://127.0.0.1:0",
            ConfigValues::parseUriList,
            "Producer: the transports that serve staged checkpoints and where they bind, in order of preference."
                    + " Unavailable ones (no UCX, no CUDA) are skipped with a log line"
                    + " (at INFO when listed here explicitly, at DEBUG when only in this default)."));
    public static final ConfigKey<Optional<Path>> PFS_ROOT = define(CORE.key(
            "viper.pfs.root",
            ConfigType.PATH,
            "",
            ConfigParsers::optionalPath,
            "Root of the PFS repository (file system path). Producers flush every version there; consumers"
                    + " fall back to it. Empty: no PFS."));
    public static final ConfigKey<Integer> PFS_RETENTION = define(CORE.intKey(
            "viper.pfs.retention",
            3,
            1,
            Integer.MAX_VALUE,
            "How many newest versions per model the PFS repository keeps."));
    public static final ConfigKey<Long> STAGING_BUDGET = define(CORE.sizeKey(
            "viper.producer.staging.budget.bytes",
            "4g",
            1,
            Long.MAX_VALUE,
            "Producer: most host memory for one model's staging buffers (k, m, g suffixes); every model of the"
                    + " instance together stays within viper.memory.host.budget.bytes."));
    public static final ConfigKey<Integer> STAGING_VERSIONS = define(CORE.intKey(
            "viper.producer.staging.versions",
            2,
            1,
            Integer.MAX_VALUE,
            "Producer: how many newest versions stay staged for consumers; older buffers are recycled once no"
                    + " lease holds them."));
    public static final ConfigKey<Long> STAGING_WAIT_MS = define(CORE.longKey(
            "viper.producer.staging.wait.ms",
            30_000,
            0,
            Long.MAX_VALUE,
            "Producer: how long publish waits for a staging buffer when all are leased and the budget is spent."));
    public static final ConfigKey<Boolean> STAGING_COMPARE = define(CORE.booleanKey(
            "viper.producer.staging.compare",
            true,
            "Producer: compare a snapshot with the earlier version a recycled staging buffer holds (same"
                    + " tensors and shapes) and copy and hash only the"
                    + " blocks that differ. The compare reads both copies, about the cost of the copy it"
                    + " replaces; the unchanged blocks keep their hashes, so"
                    + " where few changed the hashing is skipped and the announcement follows the stall."
                    + " false: copy and hash every byte."));
    public static final ConfigKey<Integer> PRODUCER_COPY_THREADS = define(CORE.key(
            "viper.producer.copy.threads",
            ConfigType.INT,
            "auto",
            v -> ConfigParsers.threads(v, 64),
            "Producer: threads that copy (or compare) a host snapshot of 32 MiB or more into staging, the"
                    + " training thread and up to"
                    + " viper.hash.threads of the hash pool, which is idle during the copy (1 to 64; auto:"
                    + " min(4, cores)). One core cannot use the"
                    + " memory's bandwidth: 1 copies on the training thread alone, as does a snapshot in a"
                    + " confined arena."));
    public static final ConfigKey<Long> PRODUCER_INLINE_BYTES = define(CORE.sizeKey(
            "viper.producer.inline.bytes",
            "64k",
            0,
            Notifier.MAX_INLINE_BYTES,
            "Producer: a version of at most this many bytes travels inside its announcement (embedded notifier), so"
                    + " that consumers swap it in"
                    + " without a second round trip to fetch it; consumers verify it as any other (0 to 1m; 0:"
                    + " never). Larger versions, and every version"
                    + " through a notifier that cannot carry bytes, are fetched over the transports."));
    public static final ConfigKey<Long> CONSUMER_BUDGET = define(CORE.sizeKey(
            "viper.consumer.host.budget.bytes",
            "4g",
            1,
            Long.MAX_VALUE,
            "Consumer: most host memory for one model's receive buffers (two per model: one serves, one receives);"
                    + " every model of the instance together stays within viper.memory.host.budget.bytes."));
    public static final ConfigKey<List<String>> CONSUMER_PATHS = define(CORE.key(
            "viper.consumer.paths",
            ConfigType.LIST,
            "",
            ConfigParsers::parseInstalledTransports,
            "Consumer: transport schemes it may use (e.g. ucx,tcp,file); empty: every available one."));
    public static final ConfigKey<List<URI>> CONSUMER_RELAY_TRANSPORTS = define(CORE.key(
            "viper.consumer.relay.transports",
            ConfigType.URI_LIST,
            "",
            ConfigValues::parseUriList,
            "Consumer: transports on which it serves, to other consumers of the same models, the blocks it has"
                    + " verified (of the version it serves and of the one it receives, each block as soon as it is"
                    + " checked), e.g. tcp://127.0.0.1:0; the producer's tracker sends other readers to it. Same"
                    + " authentication, TLS and limits as a producer's transports. Empty: it serves nothing."));
    public static final ConfigKey<Integer> FLEET_READERS_PER_SOURCE = define(CORE.intKey(
            "viper.fleet.readers.per.source",
            1,
            1,
            1024,
            "Producer (its tracker): readers of a version sent to one source (itself or a relay) while another has"
                    + " room. 1: a pipelined chain (each link carries the model once); k: a tree of fan-out k."));
    public static final ConfigKey<Boolean> CONSUMER_INLINE = define(CORE.booleanKey(
            "viper.consumer.inline",
            true,
            "Consumer serving on host: take a small version's bytes from its announcement when the producer attached"
                    + " them"
                    + " (viper.producer.inline.bytes), verified like any other, rather than fetch them; its updates"
                    + " report the path inline."
                    + " false: always fetch over viper.consumer.paths."));
    public static final ConfigKey<Boolean> CONSUMER_VERIFY_REUSE_HASHES = define(CORE.booleanKey(
            "viper.consumer.verify.reuse.hashes",
            false,
            "Consumer serving on host, delta updates: for the blocks its free receive buffer still holds at"
                    + " the same place, take the CRC32C"
                    + " pieces computed when that version was verified instead of reading those bytes again"
                    + " (true), or hash every byte after the"
                    + " announcement as a full pull does (false). Every tensor's hash is compared with the"
                    + " manifest before the swap either way, so a"
                    + " wrong block, copy or read is caught; true gives up catching bytes that changed in the"
                    + " consumer's own idle buffer after they"
                    + " were verified (memory gone bad), and saves a pass over the unchanged bytes (about 40"
                    + " ms per GiB on a 2-core machine)."));
    public static final ConfigKey<String> CONSUMER_DEVICE = define(CORE.key(
            "viper.consumer.device",
            ConfigType.STRING,
            "host",
            ConfigParsers::parseDevice,
            "Consumer: where it serves the model: host, or gpu (CUDA device 0; gpu:N for device N). With gpu,"
                    + " GPU locations (cuda-ipc, cuda-pipe) are used when a CUDA driver is present and the"
                    + " model fits."));
    public static final ConfigKey<Long> CONSUMER_GPU_BUDGET = define(CORE.sizeKey(
            "viper.consumer.gpu.budget.bytes",
            "8g",
            1,
            Long.MAX_VALUE,
            "Consumer with viper.consumer.device=gpu: most GPU memory for one model's received versions (the serving"
                    + " one and the one arriving); every consumer of the instance together stays within"
                    + " viper.memory.gpu.budget.bytes."));
    public static final ConfigKey<Long> MEMORY_HOST_BUDGET = define(CORE.sizeKey(
            "viper.memory.host.budget.bytes",
            "8g",
            1,
            Long.MAX_VALUE,
            "Most host memory the staging buffers of this instance's producers and the receive buffers of its"
                    + " consumers take together (each model also within its own budget). A producer that finds it"
                    + " spent waits"
                    + " viper.producer.staging.wait.ms for buffers to come back, then fails naming who holds what; a"
                    + " consumer"
                    + " serves from the PFS instead, or tries again later."));
    public static final ConfigKey<Long> MEMORY_GPU_BUDGET = define(CORE.sizeKey(
            "viper.memory.gpu.budget.bytes",
            "8g",
            1,
            Long.MAX_VALUE,
            "Most GPU memory the received versions of this instance's consumers take together (each consumer also"
                    + " within viper.consumer.gpu.budget.bytes)."));
    public static final ConfigKey<Boolean> CONSUMER_AUTOLOAD = define(CORE.booleanKey(
            "viper.consumer.autoload",
            true,
            "Consumer: pull every newer version as a whole model (true), or only follow manifests and pull"
                    + " tensors on fetch() (false)."));
    public static final ConfigKey<Long> LEASE_WAIT_MS = define(CORE.longKey(
            "viper.consumer.buffer.wait.ms",
            10_000,
            0,
            Long.MAX_VALUE,
            "Consumer: how long a fetch waits for inference threads to close their leases on the receive"
                    + " buffer before it serves from the PFS instead."));
    public static final ConfigKey<Long> RETRY_BACKOFF_MS = define(CORE.longKey(
            "viper.consumer.retry.backoff.ms",
            500,
            1,
            Long.MAX_VALUE,
            "Consumer: first delay before retrying a version whose every location failed (doubles up to 30 s)."));
    public static final ConfigKey<Long> TRANSFER_TIMEOUT_MS = define(CORE.longKey(
            "viper.transfer.timeout.ms",
            60_000,
            1,
            Long.MAX_VALUE,
            "Transports: a transfer fails as retriable after this long (tcp: without progress; ucx and cuda:"
                    + " for the whole read)."));
    public static final ConfigKey<Long> NOTIFY_TIMEOUT_MS = define(CORE.longKey(
            "viper.notify.timeout.ms",
            30_000,
            1,
            Long.MAX_VALUE,
            "Notifiers: how long publish waits for the broker's acknowledgement."));
    public static final ConfigKey<Integer> HASH_THREADS = define(CORE.key(
            "viper.hash.threads",
            ConfigType.INT,
            "auto",
            v -> ConfigParsers.threads(v, Integer.MAX_VALUE),
            "Threads that hash tensors (producer) and verify them (consumer); auto: min(4, cores)."));
    public static final ConfigKey<HashAlgorithm> HASH_ALGORITHM = define(CORE.key(
            "viper.hash.algorithm",
            ConfigType.STRING,
            "crc32c",
            HashAlgorithm::named,
            "Producer: the hash of every tensor in its manifests, which consumers check before they swap a"
                    + " version in: crc32c (manifest format 2;"
                    + " the processor's CRC instructions, checked in pieces on several threads while the"
                    + " model arrives) or xxh3_128 (format 1, which"
                    + " consumers of Viper before format 2 read; sequential per tensor and about 3 times"
                    + " slower). Manifests with blocks (viper.block.bytes) are format 3."));
    public static final ConfigKey<Long> BLOCK_BYTES = define(CORE.key(
            "viper.block.bytes",
            ConfigType.SIZE,
            "1m",
            ConfigParsers::parseBlockBytes,
            "Producer: the size of the content-addressed blocks each tensor is cut into (4k to 1g; 0: none)."
                    + " A consumer that holds a version pulls only the"
                    + " blocks of a newer one it does not hold, and the PFS repository stores each distinct"
                    + " block once."));
    public static final ConfigKey<Boolean> BLOCK_SKIP_UNSHARED = define(CORE.booleanKey(
            "viper.producer.block.skip.unshared",
            true,
            "Producer with blocks and viper.producer.staging.compare: a version that shares no block with the earlier"
                    + " version its staging buffer"
                    + " held (with the default two staged versions, the one three back) goes without block ids, as"
                    + " with viper.block.bytes=0: consumers pull it whole"
                    + " and the PFS repository keeps it as one file, and its announcement does not wait for the"
                    + " XXH3-128 of every block. The next version"
                    + " that shares blocks with it has all of its ids again. false: every version carries block ids,"
                    + " so blocks it shares with older"
                    + " versions or other models are still reused and stored once."));
    public static final ConfigKey<String> PRODUCER_ID = define(CORE.key(
            "viper.producer.id",
            ConfigType.STRING,
            "",
            v -> v,
            "Producer id carried in manifests; empty: hostname:pid."));
    public static final ConfigKey<Optional<Path>> AUTH_SECRET_FILE = define(CORE.key(
            "viper.auth.secret.file",
            ConfigType.PATH,
            "",
            ConfigParsers::optionalPath,
            "File holding the shared secret (viper secret --out FILE makes one) or a consumer token (viper secret"
                    + " --consumer); group and others must not read it."
                    + " Set: every connection authenticates both ways (HMAC-SHA256 challenge-response). Empty: none."));
    public static final ConfigKey<String> AUTH_USER_SECRET = define(CORE.key(
            "viper.auth.user.secret",
            ConfigType.STRING,
            "auto",
            v -> v,
            "Without viper.auth.secret.file: auto uses this user's own secret, $XDG_CONFIG_HOME/viper/secret"
                    + " (~/.config/viper/secret), made on first use (mode 600), so that other users of the machine"
                    + " are kept out; a path uses that file likewise; off: no secret, nothing authenticated."));
    public static final ConfigKey<Long> VERSIONS_MAX_JUMP = define(CORE.longKey(
            "viper.versions.max.jump",
            1_000_000_000L,
            1,
            Manifest.MAX_VERSION,
            "A version more than this beyond both its model's newest known version and the wall clock in"
                    + " milliseconds (where producers on a new broker start numbering) is refused and logged."));
    public static final ConfigKey<String> AUTH_REQUIRED = define(CORE.key(
            "viper.auth.required",
            ConfigType.STRING,
            "auto",
            v -> ConfigParsers.oneOf(v, "auto", "true", "false"),
            "Servers without viper.auth.secret.file: auto refuses to start on an address other than loopback,"
                    + " true refuses everywhere, false serves everyone who can connect."));
    public static final ConfigKey<Boolean> TLS_ENABLED = define(CORE.booleanKey(
            "viper.tls.enabled",
            false,
            "tcp:// and embedded:// connections use TLS: servers present viper.tls.cert.file, clients check"
                    + " it against viper.tls.trust.file and the host they dialled."));
    public static final ConfigKey<Optional<Path>> TLS_CERT_FILE = define(CORE.key(
            "viper.tls.cert.file",
            ConfigType.PATH,
            "",
            ConfigParsers::optionalPath,
            "Servers with TLS: their certificate chain, PEM."));
    public static final ConfigKey<Optional<Path>> TLS_KEY_FILE = define(CORE.key(
            "viper.tls.key.file",
            ConfigType.PATH,
            "",
            ConfigParsers::optionalPath,
            "Servers with TLS: the certificate's private key, PEM (PKCS#8, unencrypted); group and others"
                    + " must not read it."));
    public static final ConfigKey<Optional<Path>> TLS_TRUST_FILE = define(CORE.key(
            "viper.tls.trust.file",
            ConfigType.PATH,
            "",
            ConfigParsers::optionalPath,
            "Clients with TLS: the certificates they trust, PEM. Empty: the JDK's default trust store."));
    public static final ConfigKey<Long> LIMIT_FRAME_BYTES = define(CORE.sizeKey(
            "viper.limits.frame.bytes",
            "8m",
            1024,
            Integer.MAX_VALUE - 8,
            "Servers: the largest frame a peer may send (the broker's manifests are the large ones); a longer"
                    + " one closes the connection before it is buffered."));
    public static final ConfigKey<Long> LIMIT_BUFFER_BYTES = define(CORE.sizeKey(
            "viper.limits.buffer.bytes",
            "16m",
            65_536,
            Long.MAX_VALUE,
            "Servers: the most bytes queued for one peer that does not read them (manifests for a slow"
                    + " subscriber, requests behind a stream); beyond it the connection is closed."));
    public static final ConfigKey<Long> LIMIT_IDLE_MS = define(CORE.longKey(
            "viper.limits.idle.ms",
            120_000,
            100,
            Long.MAX_VALUE,
            "Servers: a connection that sends nothing for this long, or leaves a frame half-sent as long, is"
                    + " closed (notifier clients send a heartbeat)."));
    public static final ConfigKey<Long> LIMIT_HANDSHAKE_MS = define(CORE.longKey(
            "viper.limits.handshake.ms",
            10_000,
            10,
            Long.MAX_VALUE,
            "Servers: a new connection must complete the authentication handshake within this long."));
    public static final ConfigKey<Integer> LIMIT_CONNECTIONS_PER_PEER = define(CORE.intKey(
            "viper.limits.connections.per.peer",
            64,
            1,
            Integer.MAX_VALUE,
            "Servers: open connections one peer address may hold; more are closed at once."));
    public static final ConfigKey<Integer> LIMIT_CONNECTIONS_TOTAL = define(CORE.intKey(
            "viper.limits.connections.total",
            1024,
            2,
            Integer.MAX_VALUE,
            "Servers: open connections in all; more are closed at once (one log line per 10 s)."));
    public static final ConfigKey<Integer> LIMIT_CONNECTIONS_UNAUTHENTICATED = define(CORE.intKey(
            "viper.limits.connections.unauthenticated",
            128,
            1,
            Integer.MAX_VALUE,
            "Servers: connections still in the handshake; more are closed at once, so a flood of them leaves"
                    + " room for authenticated peers."));

    private static <T> ConfigKey<T> define(ConfigKey<T> key) {
        CORE_KEYS.add(key);
        return key;
    }

    /** The keys core declares, in declaration order. */
    public static List<ConfigKey<?>> coreKeys() {
        return List.copyOf(CORE_KEYS);
    }

    /**
     * Every declared key: core's, then those of the installed transport, notifier and repository providers (found with
     * {@link java.util.ServiceLoader}) by component name, each component's in declaration order, so that docs come out
     * the same whatever the class path order.
     */
    public static List<ConfigKey<?>> keys() {
        return declared().keys();
    }

    private static ConfigDef declared() {
        List<ConfigKey<?>> plugins = new ArrayList<>();
        Providers.transports().stream().map(TransportProvider::configKeys).forEach(plugins::addAll);
        Providers.notifiers().stream().map(NotifierProvider::configKeys).forEach(plugins::addAll);
        Providers.repositories().stream().map(RepositoryProvider::configKeys).forEach(plugins::addAll);
        plugins.sort(Comparator.comparing(ConfigKey::component));
        List<ConfigKey<?>> all = new ArrayList<>(CORE_KEYS);
        all.addAll(plugins);
        return ConfigDef.of(all);
    }

    private final Map<String, String> raw;
    private final Map<ConfigKey<?>, Object> parsed = new LinkedHashMap<>();

    private ViperConfig(Map<String, String> values) {
        Map<String, String> copy = new TreeMap<>();
        values.forEach((k, v) -> {
            if (k == null || v == null) {
                throw new ViperConfigException("configuration keys and values must not be null (key " + k + ")");
            }
            copy.put(k, v);
        });
        ConfigDef def = declared();
        List<String> unknown = new ArrayList<>();
        copy.forEach((k, v) -> {
            if (k.startsWith("viper.")) {
                if (def.find(k).isEmpty()) {
                    unknown.add(k
                            + def.nearest(k)
                                    .map(n -> " (did you mean " + n + "?)")
                                    .orElse(""));
                }
            } else if (k.isBlank()) {
                throw new ViperConfigException("empty configuration key (with value '" + v + "')");
            } else if (PASSTHROUGH_PREFIXES.stream().noneMatch(p -> k.startsWith(p) && k.length() > p.length())) {
                throw new ViperConfigException(
                        "configuration key '" + k + "' is neither a viper.* key nor a passthrough "
                                + String.join(
                                        ", ",
                                        PASSTHROUGH_PREFIXES.stream()
                                                .map(p -> p + "<setting>")
                                                .toList()) + " key");
            }
        });
        if (!unknown.isEmpty()) {
            throw new ViperConfigException(
                    "unknown configuration key" + (unknown.size() > 1 ? "s " : " ") + String.join(", ", unknown));
        }
        this.raw = Collections.unmodifiableMap(copy);
        for (ConfigKey<?> k : def.keys()) {
            parsed.put(k, k.parse(copy.get(k.name())));
        }
    }

    /**
     * Validates {@code values}: unknown {@code viper.*} keys, keys outside {@code viper.*} and the passthrough
     * prefixes, and invalid values (core or plugin) throw {@link ViperConfigException}.
     */
    public static ViperConfig of(Map<String, String> values) {
        return new ViperConfig(values);
    }

    /** Every key at its default. */
    public static ViperConfig defaults() {
        return new ViperConfig(Map.of());
    }

    /** The parsed value of {@code key} (its default when unset). */
    @SuppressWarnings("unchecked")
    public <T> T get(ConfigKey<T> key) {
        if (parsed.containsKey(key)) {
            return (T) parsed.get(key);
        }
        // A key of a provider that ServiceLoader does not list (made directly, as tests do): parse it now.
        return key.parse(raw.get(key.name()));
    }

    /** Every key as given. */
    public Map<String, String> originals() {
        return raw;
    }

    /** The keys starting with {@code prefix} (one of {@link #PASSTHROUGH_PREFIXES}), with the prefix removed. */
    public Map<String, String> passthrough(String prefix) {
        Map<String, String> out = new TreeMap<>();
        raw.forEach((k, v) -> {
            if (k.startsWith(prefix)) {
                out.put(k.substring(prefix.length()), v);
            }
        });
        return Collections.unmodifiableMap(out);
    }

    /** The CUDA device of a {@link #CONSUMER_DEVICE} value, or -1 for host. */
    public static int cudaDevice(String device) {
        if (device.equals("host")) {
            return -1;
        }
        return device.equals("gpu") ? 0 : Integer.parseInt(device.substring(4));
    }
}
