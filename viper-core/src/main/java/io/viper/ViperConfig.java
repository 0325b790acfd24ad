package io.viper;

import io.viper.errors.ViperConfigException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Validated, immutable configuration of a {@link Viper} instance, in the style of Kafka's
 * {@code ConfigDef}: every key is declared once below with its type, default, validator and doc.
 *
 * <p>Keys starting with {@code viper.} must be known (a typo is an error, not a silent default).
 * Other keys (for example {@code kafka.security.protocol}) are passed through to the plugins that
 * understand them. Thread-safe.
 */
public final class ViperConfig {

    /** One configuration key: its name, default, parser/validator and documentation. */
    public record Key<T>(String name, String defaultValue, Function<String, T> parser, String doc) {
        /** Parses {@code raw} (or the default when null) and validates it. */
        public T parse(String raw) {
            String v = raw == null ? defaultValue : raw.trim();
            if (v == null) {
                return null;
            }
            try {
                return parser.apply(v);
            } catch (ViperConfigException e) {
                throw new ViperConfigException("invalid value '" + v + "' for " + name + ": " + e.getMessage());
            } catch (RuntimeException e) {
                throw new ViperConfigException("invalid value '" + v + "' for " + name + ": " + e.getMessage(), e);
            }
        }
    }

    private static final SequencedMap<String, Key<?>> KEYS = new LinkedHashMap<>();

    /** Namespaces whose keys the transport and notifier plugins declare and validate themselves. */
    public static final List<String> PLUGIN_PREFIXES = List.of("viper.ucx.", "viper.tcp.", "viper.kafka.", "viper.cuda.", "viper.gpu.");

    public static final Key<URI> NOTIFIER = define("viper.notifier", "embedded://127.0.0.1:0", ViperConfig::parseUri,
            "Where manifests are announced: embedded://host:port (a broker the producer hosts; port 0 picks one) or kafka://host:port[,host:port][?topic=T].");
    public static final Key<List<URI>> TRANSPORTS = define("viper.transports", "ucx://127.0.0.1:0,tcp://127.0.0.1:0,cuda-ipc://127.0.0.1:0,ucx-cuda://127.0.0.1:0,cuda-pipe://127.0.0.1:0", ViperConfig::parseUriList,
            "Producer: the transports that serve staged checkpoints and where they bind, in order of preference. Unavailable ones (no UCX, no CUDA) are skipped with a log line"
            + " (at INFO when listed here explicitly, at DEBUG when only in this default).");
    public static final Key<Optional<Path>> PFS_ROOT = define("viper.pfs.root", "", v -> v.isEmpty() ? Optional.empty() : Optional.of(Path.of(v).toAbsolutePath()),
            "Root of the PFS repository (file system path). Producers flush every version there; consumers fall back to it. Empty: no PFS.");
    public static final Key<Integer> PFS_RETENTION = define("viper.pfs.retention", "3", v -> intAtLeast(v, 1),
            "How many newest versions per model the PFS repository keeps.");
    public static final Key<Long> STAGING_BUDGET = define("viper.producer.staging.budget.bytes", "4g", v -> sizeAtLeast(v, 1),
            "Producer: most host memory for staging buffers (k, m, g suffixes).");
    public static final Key<Integer> STAGING_VERSIONS = define("viper.producer.staging.versions", "2", v -> intAtLeast(v, 1),
            "Producer: how many newest versions stay staged for consumers; older buffers are recycled once no lease holds them.");
    public static final Key<Long> STAGING_WAIT_MS = define("viper.producer.staging.wait.ms", "30000", v -> longAtLeast(v, 0),
            "Producer: how long publish waits for a staging buffer when all are leased and the budget is spent.");
    public static final Key<Long> CONSUMER_BUDGET = define("viper.consumer.host.budget.bytes", "4g", v -> sizeAtLeast(v, 1),
            "Consumer: most host memory for receive buffers (two per model: one serves, one receives).");
    public static final Key<List<String>> CONSUMER_PATHS = define("viper.consumer.paths", "", ViperConfig::parseNameList,
            "Consumer: transport schemes it may use (e.g. ucx,tcp,file); empty: every available one.");
    public static final Key<String> CONSUMER_DEVICE = define("viper.consumer.device", "host", ViperConfig::parseDevice,
            "Consumer: where it serves the model: host, or gpu (CUDA device 0; gpu:N for device N). With gpu, GPU locations (cuda-ipc, cuda-pipe) are used when a CUDA driver is present and the model fits.");
    public static final Key<Long> CONSUMER_GPU_BUDGET = define("viper.consumer.gpu.budget.bytes", "8g", v -> sizeAtLeast(v, 1),
            "Consumer with viper.consumer.device=gpu: most GPU memory for received models (the serving one and the one arriving).");
    public static final Key<Boolean> CONSUMER_AUTOLOAD = define("viper.consumer.autoload", "true", ViperConfig::parseBoolean,
            "Consumer: pull every newer version as a whole model (true), or only follow manifests and pull tensors on fetch() (false).");
    public static final Key<Long> LEASE_WAIT_MS = define("viper.consumer.buffer.wait.ms", "10000", v -> longAtLeast(v, 0),
            "Consumer: how long a fetch waits for inference threads to close their leases on the receive buffer before it serves from the PFS instead.");
    public static final Key<Long> RETRY_BACKOFF_MS = define("viper.consumer.retry.backoff.ms", "500", v -> longAtLeast(v, 1),
            "Consumer: first delay before retrying a version whose every location failed (doubles up to 30 s).");
    public static final Key<Long> TRANSFER_TIMEOUT_MS = define("viper.transfer.timeout.ms", "60000", v -> longAtLeast(v, 1),
            "Transports: a transfer fails as retriable after this long (tcp: without progress; ucx and cuda: for the whole read).");
    public static final Key<Long> NOTIFY_TIMEOUT_MS = define("viper.notify.timeout.ms", "30000", v -> longAtLeast(v, 1),
            "Notifiers: how long publish waits for the broker's acknowledgement.");
    public static final Key<Integer> HASH_THREADS = define("viper.hash.threads", Integer.toString(Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()))),
            v -> intAtLeast(v, 1), "Threads that hash tensors (producer) and verify them (consumer).");
    public static final Key<String> PRODUCER_ID = define("viper.producer.id", "", v -> v,
            "Producer id carried in manifests; empty: hostname:pid.");

    private static <T> Key<T> define(String name, String def, Function<String, T> parser, String doc) {
        Key<T> k = new Key<>(name, def, parser, doc);
        KEYS.put(name, k);
        return k;
    }

    /** Every declared key, in declaration order (for docs and {@code --help}). */
    public static List<Key<?>> keys() {
        return List.copyOf(KEYS.values());
    }

    private final Map<String, String> raw;
    private final Map<Key<?>, Object> parsed = new LinkedHashMap<>();

    private ViperConfig(Map<String, String> values) {
        Map<String, String> copy = new TreeMap<>();
        values.forEach((k, v) -> {
            if (k == null || v == null) {
                throw new ViperConfigException("configuration keys and values must not be null (key " + k + ")");
            }
            copy.put(k, v);
        });
        List<String> unknown = new ArrayList<>();
        for (String k : copy.keySet()) {
            if (k.startsWith("viper.") && !KEYS.containsKey(k) && PLUGIN_PREFIXES.stream().noneMatch(k::startsWith)) {
                unknown.add(k);
            }
        }
        if (!unknown.isEmpty()) {
            throw new ViperConfigException("unknown configuration key" + (unknown.size() > 1 ? "s " : " ") + String.join(", ", unknown));
        }
        this.raw = Collections.unmodifiableMap(copy);
        for (Key<?> k : KEYS.values()) {
            parsed.put(k, k.parse(copy.get(k.name())));
        }
    }

    /** Validates {@code values}; unknown {@code viper.*} keys and invalid values throw {@link ViperConfigException}. */
    public static ViperConfig of(Map<String, String> values) {
        return new ViperConfig(values);
    }

    /** The parsed value of {@code key} (its default when unset). */
    @SuppressWarnings("unchecked")
    public <T> T get(Key<T> key) {
        return (T) parsed.get(key);
    }

    /** Every key as given (passthrough keys included), for plugins. */
    public Map<String, String> originals() {
        return raw;
    }

    /** Plugin view: the given keys plus every declared key's effective value. */
    public Map<String, String> pluginConfig() {
        Map<String, String> m = new TreeMap<>(raw);
        for (Key<?> k : KEYS.values()) {
            if (!m.containsKey(k.name()) && k.defaultValue() != null) {
                m.put(k.name(), k.defaultValue());
            }
        }
        return Collections.unmodifiableMap(m);
    }

    static URI parseUri(String v) {
        try {
            URI u = new URI(v);
            if (u.getScheme() == null) {
                throw new ViperConfigException("'" + v + "' is not a URI with a scheme (e.g. tcp://127.0.0.1:0)");
            }
            return u;
        } catch (URISyntaxException e) {
            throw new ViperConfigException("'" + v + "' is not a URI: " + e.getReason());
        }
    }

    static List<URI> parseUriList(String v) {
        List<URI> out = new ArrayList<>();
        for (String part : v.split(",")) {
            if (!part.isBlank()) {
                out.add(parseUri(part.trim()));
            }
        }
        return List.copyOf(out);
    }

    static List<String> parseNameList(String v) {
        List<String> out = new ArrayList<>();
        for (String part : v.split(",")) {
            if (!part.isBlank()) {
                out.add(part.trim().toLowerCase(Locale.ROOT));
            }
        }
        return List.copyOf(out);
    }

    static String parseDevice(String v) {
        String d = v.toLowerCase(Locale.ROOT);
        if (d.equals("host") || d.equals("gpu") || d.matches("gpu:[0-9]{1,3}")) {
            return d;
        }
        throw new ViperConfigException("must be host, gpu or gpu:N");
    }

    /** The CUDA device of a {@link #CONSUMER_DEVICE} value, or -1 for host. */
    public static int cudaDevice(String device) {
        if (device.equals("host")) {
            return -1;
        }
        return device.equals("gpu") ? 0 : Integer.parseInt(device.substring(4));
    }

    static boolean parseBoolean(String v) {
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new ViperConfigException("must be true or false");
        };
    }

    static int intAtLeast(String v, int min) {
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new ViperConfigException("not an integer");
        }
        if (n < min) {
            throw new ViperConfigException("must be at least " + min);
        }
        return n;
    }

    static long longAtLeast(String v, long min) {
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new ViperConfigException("not an integer");
        }
        if (n < min) {
            throw new ViperConfigException("must be at least " + min);
        }
        return n;
    }

    static long sizeAtLeast(String v, long min) {
        long n = parseSize(v);
        if (n < min) {
            throw new ViperConfigException("must be at least " + min + " bytes");
        }
        return n;
    }

    /**
     * Parses a byte size: a plain number of bytes or a number with a suffix k, m, g, t (powers of
     * 1024, optionally followed by "b" or "ib"), e.g. {@code 1g}, {@code 512MiB}, {@code 1.5g}.
     */
    public static long parseSize(String v) {
        String s = v.trim().toLowerCase(Locale.ROOT).replace("_", "");
        if (s.endsWith("ib")) {
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("b")) {
            s = s.substring(0, s.length() - 1);
        }
        long mult = 1;
        if (!s.isEmpty()) {
            switch (s.charAt(s.length() - 1)) {
                case 'k' -> mult = 1L << 10;
                case 'm' -> mult = 1L << 20;
                case 'g' -> mult = 1L << 30;
                case 't' -> mult = 1L << 40;
                default -> mult = 1;
            }
            if (mult > 1) {
                s = s.substring(0, s.length() - 1);
            }
        }
        try {
            double d = Double.parseDouble(s);
            if (!(d >= 0) || Double.isInfinite(d) || d * mult > Long.MAX_VALUE) {
                throw new NumberFormatException();
            }
            return (long) (d * mult);
        } catch (NumberFormatException e) {
            throw new ViperConfigException("'" + v + "' is not a byte size (e.g. 1048576, 512m, 1g)");
        }
    }
}
