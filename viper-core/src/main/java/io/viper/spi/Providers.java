package io.viper.spi;

import io.viper.errors.ViperConfigException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.TreeSet;

/**
 * Finds SPI implementations with {@link ServiceLoader}, by URI scheme. The providers are loaded once, on first use, and
 * the instances are kept for the life of the class loader (as Arrow's {@code CompressionCodec.Factory} does): consumers
 * look up transports for every version and producers the GPU for every GPU publish. Providers are stateless factories,
 * so sharing one instance is safe; whether one is usable ({@code unavailableReason}) is still asked on every call.
 * Thread-safe.
 */
public final class Providers {
    private Providers() {}

    /** Every transport on the class or module path, by tier then priority. */
    public static List<TransportProvider> transports() {
        return Loaded.TRANSPORTS;
    }

    /** The transport for {@code scheme}, if one is installed. */
    public static Optional<TransportProvider> transport(String scheme) {
        String s = scheme.toLowerCase(Locale.ROOT);
        return transports().stream().filter(p -> p.scheme().equals(s)).findFirst();
    }

    /**
     * The first installed GPU provider that works here, else the first installed one (whose {@code unavailableReason}
     * says why not), else empty.
     */
    public static Optional<GpuProvider> gpu() {
        List<GpuProvider> all = Loaded.GPUS;
        return all.stream()
                .filter(g -> g.unavailableReason().isEmpty())
                .findFirst()
                .or(() -> all.stream().findFirst());
    }

    /**
     * Why CUDA cannot be used here, or empty when a GPU provider works: the provider's own reason, or that none is
     * installed. Every reason starts {@link GpuProvider#NO_CUDA}.
     */
    public static Optional<String> gpuUnavailableReason() {
        return gpu().map(GpuProvider::unavailableReason)
                .orElse(Optional.of(
                        GpuProvider.NO_CUDA + "no GPU provider installed (is viper-transfer-cuda on the class path?)"));
    }

    /** Every notifier on the class or module path. */
    public static List<NotifierProvider> notifiers() {
        return Loaded.NOTIFIERS;
    }

    /** Every repository on the class or module path. */
    public static List<RepositoryProvider> repositories() {
        return Loaded.REPOSITORIES;
    }

    /** The notifier for {@code scheme}; throws naming the installed ones when there is none. */
    public static NotifierProvider notifier(String scheme) {
        List<NotifierProvider> all = notifiers();
        String s = scheme == null ? "" : scheme.toLowerCase(Locale.ROOT);
        return all.stream().filter(p -> p.scheme().equals(s)).findFirst().orElseThrow(() -> {
            TreeSet<String> known = new TreeSet<>();
            all.forEach(p -> known.add(p.scheme() + "://"));
            return new ViperConfigException("no notifier for '" + s + "://' (installed: "
                    + (known.isEmpty() ? "none" : String.join(", ", known)) + ")");
        });
    }

    /** The repository for {@code scheme}; throws when there is none. */
    public static RepositoryProvider repository(String scheme) {
        return Loaded.REPOSITORIES.stream()
                .filter(p -> p.scheme().equals(scheme))
                .findFirst()
                .orElseThrow(() -> new ViperConfigException("no repository for '" + scheme
                        + "://' is installed (is viper-transfer-pfs on the class path?)"));
    }

    /** The providers, loaded when one is first asked for (the JVM initialises this class lazily). */
    private static final class Loaded {
        static final List<TransportProvider> TRANSPORTS = sorted(load(TransportProvider.class));
        static final List<GpuProvider> GPUS = load(GpuProvider.class);
        static final List<NotifierProvider> NOTIFIERS = load(NotifierProvider.class);
        static final List<RepositoryProvider> REPOSITORIES = load(RepositoryProvider.class);

        private static <T> List<T> load(Class<T> type) {
            List<T> out = new ArrayList<>();
            ServiceLoader.load(type, Providers.class.getClassLoader()).forEach(out::add);
            return List.copyOf(out);
        }

        private static List<TransportProvider> sorted(List<TransportProvider> all) {
            List<TransportProvider> out = new ArrayList<>(all);
            out.sort(Comparator.comparing(TransportProvider::tier).thenComparingInt(TransportProvider::priority));
            return List.copyOf(out);
        }
    }
}
