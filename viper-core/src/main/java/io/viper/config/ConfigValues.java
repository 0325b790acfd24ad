package io.viper.config;

import io.viper.errors.ViperConfigException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The parsers behind {@link ConfigKey}s: each takes a trimmed string and returns the value or throws a
 * {@link ViperConfigException} saying what is wrong (the key adds its name). Stateless.
 */
public final class ConfigValues {
    private ConfigValues() {}

    /** An int in {@code [min, max]}. */
    public static int parseInt(String v, int min, int max) {
        return (int) parseLong(v, min, max);
    }

    /** A long in {@code [min, max]}. */
    public static long parseLong(String v, long min, long max) {
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new ViperConfigException("not an integer");
        }
        return inRange(n, min, max, "");
    }

    /** A byte size (see {@link #parseSize(String)}) in {@code [min, max]} bytes. */
    public static long parseSize(String v, long min, long max) {
        return inRange(parseSize(v), min, max, " bytes");
    }

    private static long inRange(long n, long min, long max, String unit) {
        if (n < min) {
            throw new ViperConfigException("must be at least " + min + unit);
        }
        if (n > max) {
            throw new ViperConfigException("must be at most " + max + unit);
        }
        return n;
    }

    /** {@code true} or {@code false}, any case. */
    public static boolean parseBoolean(String v) {
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new ViperConfigException("must be true or false");
        };
    }

    /** A URI with a scheme. */
    public static URI parseUri(String v) {
        return parseUri(v, "tcp://127.0.0.1:0");
    }

    /** A URI with a scheme; a refusal gives {@code example} as one that would do. */
    public static URI parseUri(String v, String example) {
        try {
            URI u = new URI(v);
            if (u.getScheme() == null) {
                throw new ViperConfigException("'" + v + "' is not a URI with a scheme (e.g. " + example + ")");
            }
            return u;
        } catch (URISyntaxException e) {
            throw new ViperConfigException("'" + v + "' is not a URI: " + e.getReason());
        }
    }

    /** Comma-separated URIs with a scheme; a blank value is none, a blank entry among others is refused. */
    public static List<URI> parseUriList(String v) {
        return entries(v).stream().map(ConfigValues::parseUri).toList();
    }

    /** Comma-separated names, lower-cased; a blank value is none, a blank entry among others is refused. */
    public static List<String> parseNameList(String v) {
        return entries(v).stream().map(e -> e.toLowerCase(Locale.ROOT)).toList();
    }

    /**
     * The trimmed entries of a comma-separated list; none for a blank value. A blank entry (two commas in a row, one at
     * either end) is refused naming its position: dropping it would hide a typo, such as a transport left out.
     */
    private static List<String> entries(String v) {
        if (v.isBlank()) {
            return List.of();
        }
        String[] parts = v.split(",", -1);
        List<String> out = new ArrayList<>(parts.length);
        for (int i = 0; i < parts.length; i++) {
            if (parts[i].isBlank()) {
                throw new ViperConfigException("an empty entry at position " + (i + 1) + " (a comma too many)");
            }
            out.add(parts[i].trim());
        }
        return out;
    }

    /**
     * Parses a byte size: a plain number of bytes or a number with a suffix k, m, g, t (powers of 1024, optionally
     * followed by "b" or "ib"), e.g. {@code 1g}, {@code 512MiB}, {@code 1.5g}.
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
            mult = switch (s.charAt(s.length() - 1)) {
                case 'k' -> 1L << 10;
                case 'm' -> 1L << 20;
                case 'g' -> 1L << 30;
                case 't' -> 1L << 40;
                default -> 1;
            };
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
