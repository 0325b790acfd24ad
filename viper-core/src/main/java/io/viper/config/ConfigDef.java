package io.viper.config;

import io.viper.errors.ViperConfigException;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * A set of declared keys, each name once, in declaration order: what {@link io.viper.ViperConfig} checks a
 * configuration against, and what {@code viper config} lists. Immutable; thread-safe.
 */
public final class ConfigDef {
    private final SequencedMap<String, ConfigKey<?>> keys = new LinkedHashMap<>();

    private ConfigDef(Collection<? extends ConfigKey<?>> declared) {
        for (ConfigKey<?> k : declared) {
            ConfigKey<?> before = keys.putIfAbsent(k.name(), k);
            // Two providers of one module (ucx and ucx-cuda) hand out the same constants: that is one declaration.
            if (before != null && !before.equals(k)) {
                throw new ViperConfigException("configuration key " + k.name() + " is declared twice, by "
                        + before.component() + " and by " + k.component());
            }
        }
    }

    /** The keys in {@code declared}, each name once; a name declared twice differently is refused. */
    public static ConfigDef of(Collection<? extends ConfigKey<?>> declared) {
        return new ConfigDef(declared);
    }

    /** Every key, in declaration order. */
    public List<ConfigKey<?>> keys() {
        return List.copyOf(keys.values());
    }

    /** The key named {@code name}, if one is declared. */
    public Optional<ConfigKey<?>> find(String name) {
        return Optional.ofNullable(keys.get(name));
    }

    /** The declared name closest to {@code name} by edit distance (typos, transpositions), for "did you mean". */
    public Optional<String> nearest(String name) {
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String known : keys.keySet()) {
            int d = editDistance(name, known);
            if (d < bestDistance) {
                best = known;
                bestDistance = d;
            }
        }
        return Optional.ofNullable(best);
    }

    /** Levenshtein distance: the fewest single-character insertions, deletions and substitutions. */
    static int editDistance(String a, String b) {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int substitute = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitute, Math.min(previous[j], current[j - 1]) + 1);
            }
            int[] t = previous;
            previous = current;
            current = t;
        }
        return previous[b.length()];
    }
}
