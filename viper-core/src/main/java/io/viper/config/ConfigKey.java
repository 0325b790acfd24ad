package io.viper.config;

import io.viper.errors.ViperConfigException;
import java.util.Objects;
import java.util.function.Function;

/**
 * One declared configuration key. Immutable and thread-safe; declared once as a constant by the component that reads
 * it, and read with {@link io.viper.ViperConfig#get}.
 *
 * @param name the full key, {@code viper.<component>.<setting>}
 * @param type the kind of value, for documentation
 * @param defaultValue the value when the key is not set, as a user would write it
 * @param parser turns a trimmed string into the value; throws (any runtime exception) when it is invalid
 * @param doc one or two sentences: what the key does, units, what special values mean
 * @param component who declares it: {@code viper-core} or the module of a transport or notifier
 */
public record ConfigKey<T>(
        String name, ConfigType type, String defaultValue, Function<String, T> parser, String doc, String component) {
    /** Checks that every field is there and the name is a {@code viper.*} key. */
    public ConfigKey {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(defaultValue, "defaultValue");
        Objects.requireNonNull(parser, "parser");
        Objects.requireNonNull(doc, "doc");
        Objects.requireNonNull(component, "component");
        if (name == null || !name.startsWith("viper.") || name.length() == "viper.".length()) {
            throw new IllegalArgumentException("a configuration key is named viper.<something>, not " + name);
        }
    }

    /**
     * Parses {@code raw} (the default when null) and validates it. An invalid value throws a
     * {@link ViperConfigException} of one line naming this key, the value and the problem.
     */
    public T parse(String raw) {
        String v = raw == null ? defaultValue : raw.trim();
        try {
            return parser.apply(v);
        } catch (RuntimeException e) {
            throw new ViperConfigException("invalid value '" + v + "' for " + name + ": " + e.getMessage(), e);
        }
    }

    /** Declares keys for {@code component}: {@code ConfigKey.declaredBy("viper-transfer-ucx").intKey(...)}. */
    public static Declarer declaredBy(String component) {
        return new Declarer(component);
    }

    /** Makes the keys of one component; the typed methods pick the type and the parser. */
    public record Declarer(String component) {
        /** A key of any type with its own parser. */
        public <T> ConfigKey<T> key(
                String name, ConfigType type, String defaultValue, Function<String, T> parser, String doc) {
            return new ConfigKey<>(name, type, defaultValue, parser, doc, component);
        }

        /** An int in {@code [min, max]}. */
        public ConfigKey<Integer> intKey(String name, int defaultValue, int min, int max, String doc) {
            return key(
                    name, ConfigType.INT, Integer.toString(defaultValue), v -> ConfigValues.parseInt(v, min, max), doc);
        }

        /** A long in {@code [min, max]}. */
        public ConfigKey<Long> longKey(String name, long defaultValue, long min, long max, String doc) {
            return key(
                    name, ConfigType.LONG, Long.toString(defaultValue), v -> ConfigValues.parseLong(v, min, max), doc);
        }

        /** A byte size in {@code [min, max]} bytes; {@code defaultValue} as a user writes it ({@code 4g}). */
        public ConfigKey<Long> sizeKey(String name, String defaultValue, long min, long max, String doc) {
            return key(name, ConfigType.SIZE, defaultValue, v -> ConfigValues.parseSize(v, min, max), doc);
        }

        /** {@code true} or {@code false}. */
        public ConfigKey<Boolean> booleanKey(String name, boolean defaultValue, String doc) {
            return key(name, ConfigType.BOOLEAN, Boolean.toString(defaultValue), ConfigValues::parseBoolean, doc);
        }
    }
}
