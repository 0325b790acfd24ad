package io.viper.spi;

import io.viper.errors.ViperConfigException;
import io.viper.spi.GpuProvider;
import io.viper.spi.NotifierProvider;
import io.viper.spi.RepositoryProvider;
import io.viper.spi.TransportProvider;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.TreeSet;

/** Finds SPI implementations with {@link ServiceLoader}, by URI scheme. Thread-safe (stateless). */
public final class Providers {
    private Providers() {
    }

    /** Every transport on the class or module path, by tier then priority. */
    public static List<TransportProvider> transports() {
        List<TransportProvider> out = new ArrayList<>();
        ServiceLoader.load(TransportProvider.class, Providers.class.getClassLoader()).forEach(out::add);
        out.sort(Comparator.comparing(TransportProvider::tier).thenComparingInt(TransportProvider::priority));
        return out;
    }

    /** The transport for {@code scheme}, if one is installed. */
    public static Optional<TransportProvider> transport(String scheme) {
        String s = scheme.toLowerCase(Locale.ROOT);
        return transports().stream().filter(p -> p.scheme().equals(s)).findFirst();
    }

    /**
     * The first installed GPU provider that works here, else the first installed one (whose
     * {@code unavailableReason} says why not), else empty.
     */
    public static Optional<GpuProvider> gpu() {
        List<GpuProvider> all = new ArrayList<>();
        ServiceLoader.load(GpuProvider.class, Providers.class.getClassLoader()).forEach(all::add);
        return all.stream().filter(g -> g.unavailableReason().isEmpty()).findFirst().or(() -> all.stream().findFirst());
    }

    /** Every notifier on the class or module path. */
    public static List<NotifierProvider> notifiers() {
        List<NotifierProvider> out = new ArrayList<>();
        ServiceLoader.load(NotifierProvider.class, Providers.class.getClassLoader()).forEach(out::add);
        return out;
    }

    /** Every repository on the class or module path. */
    public static List<RepositoryProvider> repositories() {
        List<RepositoryProvider> out = new ArrayList<>();
        ServiceLoader.load(RepositoryProvider.class, Providers.class.getClassLoader()).forEach(out::add);
        return out;
    }

    /** The notifier for {@code scheme}; throws naming the installed ones when there is none. */
    public static NotifierProvider notifier(String scheme) {
        List<NotifierProvider> all = notifiers();
        String s = scheme == null ? "" : scheme.toLowerCase(Locale.ROOT);
        return all.stream().filter(p -> p.scheme().equals(s)).findFirst().orElseThrow(() -> {
            TreeSet<String> known = new TreeSet<>();
            all.forEach(p -> known.add(p.scheme() + "://"));
            return new ViperConfigException("no notifier for '" + s + "://' (installed: " + (known.isEmpty() ? "none" : String.join(", ", known)) + ")");
        });
    }

    /** The repository for {@code scheme}; throws when there is none. */
    public static RepositoryProvider repository(String scheme) {
        return repositories().stream().filter(p -> p.scheme().equals(scheme)).findFirst().orElseThrow(() ->
                new ViperConfigException("no repository for '" + scheme + "://' is installed (is viper-transfer on the class path?)"));
    }
}
