package io.viper;

import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import io.viper.spi.Providers;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.TreeSet;

/** The parsers of {@link ViperConfig}'s keys whose values need more than {@link ConfigValues}' checks. */
final class ConfigParsers {
    private ConfigParsers() {}

    /**
     * {@link ViperConfig#CONSUMER_PATHS}: schemes of installed transports only; a typo would otherwise leave a consumer
     * waiting forever.
     */
    static List<String> parseInstalledTransports(String v) {
        List<String> schemes = ConfigValues.parseNameList(v);
        if (!schemes.isEmpty()) {
            TreeSet<String> installed = new TreeSet<>();
            Providers.transports().forEach(p -> installed.add(p.scheme()));
            for (String s : schemes) {
                if (!installed.contains(s)) {
                    throw new ViperConfigException(
                            "no " + s + ":// transport is installed (installed: " + String.join(", ", installed) + ")");
                }
            }
        }
        return schemes;
    }

    /** {@link ViperConfig#BLOCK_BYTES}: 0, or a size from 4 KiB to 1 GiB. */
    static long parseBlockBytes(String v) {
        long n = ConfigValues.parseSize(v);
        if (n != 0 && (n < 4096 || n > (1L << 30))) {
            throw new ViperConfigException("must be 0 (no blocks) or from 4k to 1g");
        }
        return n;
    }

    /** A thread count from 1 to {@code max}, or auto: min(4, cores). */
    static int threads(String v, int max) {
        return v.equalsIgnoreCase("auto")
                ? Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()))
                : ConfigValues.parseInt(v, 1, max);
    }

    static Optional<Path> optionalPath(String v) {
        return v.isEmpty() ? Optional.empty() : Optional.of(Path.of(v).toAbsolutePath());
    }

    static String oneOf(String v, String... allowed) {
        String lower = v.toLowerCase(Locale.ROOT);
        if (List.of(allowed).contains(lower)) {
            return lower;
        }
        throw new ViperConfigException("must be one of " + String.join(", ", allowed));
    }

    static String parseDevice(String v) {
        String d = v.toLowerCase(Locale.ROOT);
        if (d.equals("host") || d.equals("gpu") || d.matches("gpu:[0-9]{1,3}")) {
            return d;
        }
        throw new ViperConfigException("must be host, gpu or gpu:N");
    }
}
