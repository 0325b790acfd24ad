package io.viper.cli;

import io.viper.errors.ViperConfigException;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * Parses durations like {@code 500ms}, {@code 30s}, {@code 5m}, {@code 1h}; a plain number is seconds. Negative, empty
 * and malformed values, and values over {@link #MAX_HOURS} hours, are refused with one line that shows the expected
 * form.
 */
final class Durations implements CommandLine.ITypeConverter<Duration> {
    /** A non-negative decimal number and an optional unit. */
    private static final Pattern FORM = Pattern.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ms|s|m|h)?");

    /**
     * The longest duration taken, 100 years in hours. The commands add a duration to {@link System#nanoTime()}, whose
     * range is 292 years: {@code --timeout 99999999999999999999h} failed with "viper: long overflow" (exit 1), and one
     * just under the range wrapped to a deadline already past.
     */
    static final long MAX_HOURS = 876_000;

    /** For a picocli option: a refusal becomes picocli's "Invalid value for option '--x': ..." line. */
    @Override
    public Duration convert(String value) {
        try {
            return parse(value);
        } catch (ViperConfigException e) {
            throw new CommandLine.TypeConversionException(e.getMessage());
        }
    }

    /** @throws ViperConfigException naming the value and the expected form */
    static Duration parse(String value) {
        Matcher m = FORM.matcher(value.strip().toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new ViperConfigException("'" + value
                    + "' is not a duration (a non-negative number of ms, s, m or h, e.g. 500ms, 30s, 5m, 1h)");
        }
        double millisPerUnit = switch (m.group(2) == null ? "s" : m.group(2)) {
            case "ms" -> 1;
            case "m" -> 60_000;
            case "h" -> 3_600_000;
            default -> 1_000;
        };
        double millis = Double.parseDouble(m.group(1)) * millisPerUnit;
        if (millis > MAX_HOURS * 3_600_000.0) {
            throw new ViperConfigException(
                    "'" + value + "' is too long a duration (at most " + MAX_HOURS + "h, 100 years)");
        }
        return Duration.ofMillis(Math.round(millis));
    }

    /**
     * {@code d} as a message words it: under a second in milliseconds ({@code 500 ms}), else in seconds, with the
     * milliseconds there are ({@code 30 s}, {@code 1.5 s}). Whole seconds alone said "0 s" for {@code --timeout 500ms},
     * and "1 s" for 1.5 s.
     */
    static String words(Duration d) {
        long ms = d.toMillis();
        if (ms < 1000) {
            return ms + " ms";
        }
        return BigDecimal.valueOf(ms, 3).stripTrailingZeros().toPlainString() + " s";
    }
}
