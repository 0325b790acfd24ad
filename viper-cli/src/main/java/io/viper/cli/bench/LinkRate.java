package io.viper.cli.bench;

import io.viper.errors.ViperConfigException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A link's rate as {@code tc} writes it ({@code 500mbit}, {@code 1gbit}, {@code 200kbit}, {@code 10000000bit}): what
 * {@code viper bench fleet --link-rate} takes and hands to {@code tc qdisc ... tbf rate}. Immutable.
 *
 * @param bitsPerSecond the rate
 * @param text the rate as given to {@code tc}, lower case
 */
public record LinkRate(long bitsPerSecond, String text) {
    private static final Pattern FORM = Pattern.compile("(\\d+)(bit|kbit|mbit|gbit)");
    /** The slowest rate taken: below it a 1 MiB model would take minutes. */
    static final long MIN_BITS = 1_000_000;
    /** The fastest rate taken: a veth and a tbf on this kind of machine do not go beyond it. */
    static final long MAX_BITS = 100_000_000_000L;

    /**
     * Parses {@code value} (for the message: {@code flag}), refusing any other form, and rates outside 1mbit to
     * 100gbit.
     */
    public static LinkRate parse(String flag, String value) {
        String v = value.strip().toLowerCase(Locale.ROOT);
        Matcher m = FORM.matcher(v);
        if (!m.matches() || m.group(1).length() > 12) {
            throw new ViperConfigException(
                    flag + " " + value + ": not a rate (write it as tc does: 500mbit, 1gbit, 200kbit)");
        }
        long unit = switch (m.group(2)) {
            case "kbit" -> 1_000L;
            case "mbit" -> 1_000_000L;
            case "gbit" -> 1_000_000_000L;
            default -> 1L;
        };
        long bits = Long.parseLong(m.group(1)) * unit;
        if (bits < MIN_BITS || bits > MAX_BITS) {
            throw new ViperConfigException(flag + " " + value + ": must be from 1mbit to 100gbit");
        }
        return new LinkRate(bits, v);
    }

    /** Bytes per second. */
    public double bytesPerSecond() {
        return bitsPerSecond / 8.0;
    }

    /** The time {@code bytes} take at this rate, in ms. */
    public double ms(long bytes) {
        return (double) bytes / bytesPerSecond() * 1e3;
    }
}
