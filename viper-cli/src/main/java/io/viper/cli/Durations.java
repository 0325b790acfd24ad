package io.viper.cli;

import io.viper.errors.ViperConfigException;
import java.time.Duration;
import java.util.Locale;
import picocli.CommandLine;

/** Parses durations like {@code 500ms}, {@code 30s}, {@code 5m}, {@code 1h}; a plain number is seconds. */
final class Durations implements CommandLine.ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
        return parse(value);
    }

    static Duration parse(String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        try {
            if (v.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
            }
            char unit = v.isEmpty() ? ' ' : v.charAt(v.length() - 1);
            String num = Character.isDigit(unit) ? v : v.substring(0, v.length() - 1);
            double n = Double.parseDouble(num);
            if (n < 0 || Double.isNaN(n) || Double.isInfinite(n)) {
                throw new NumberFormatException();
            }
            double seconds = switch (unit) {
                case 's' -> n;
                case 'm' -> n * 60;
                case 'h' -> n * 3600;
                default -> {
                    if (!Character.isDigit(unit)) {
                        throw new NumberFormatException();
                    }
                    yield n;
                }
            };
            return Duration.ofMillis(Math.round(seconds * 1000));
        } catch (NumberFormatException e) {
            throw new ViperConfigException("'" + value + "' is not a duration (e.g. 500ms, 30s, 5m, 1h)");
        }
    }
}
