package io.viper.scheduler;

import io.viper.errors.ViperConfigException;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** The lower-case names by which the command line and JSON spell this package's enums, and their parsing. */
final class EnumNames {
    private EnumNames() {}

    /** {@code e}'s name in lower case. */
    static String displayName(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }

    /** Every name, in declaration order, comma-separated. */
    static String names(Enum<?>[] values) {
        return Arrays.stream(values).map(EnumNames::displayName).collect(Collectors.joining(", "));
    }

    /**
     * The value named {@code name}, ignoring case and surrounding blanks.
     *
     * @throws ViperConfigException for an unknown name: {@code unknown KIND 'NAME'; known: ...}
     */
    static <E extends Enum<E>> E parse(E[] values, String kind, String name) {
        for (E v : values) {
            if (displayName(v).equalsIgnoreCase(name == null ? "" : name.strip())) {
                return v;
            }
        }
        throw new ViperConfigException("unknown " + kind + " '" + name + "'; known: " + names(values));
    }
}
