package io.viper.demo.internal;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * Reads the {@code --name value} arguments of the demo's producer and consumer processes, checked against the names a
 * process accepts; {@link ProcessOptions} says which names and what they hold. The demo driver ({@code viper demo})
 * writes them; a person rarely does.
 */
public final class DemoArgs {
    private final Map<String, String> values = new HashMap<>();
    private final String program;

    private DemoArgs(String program) {
        this.program = program;
    }

    /**
     * Parses {@code args}.
     *
     * @throws IllegalArgumentException naming the first unknown, repeated or valueless option
     */
    static DemoArgs parse(String program, String[] args, Set<String> known) {
        DemoArgs a = new DemoArgs(program);
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (!flag.startsWith("--") || !known.contains(flag.substring(2))) {
                throw new IllegalArgumentException(program + ": unknown option " + flag + " (known: --"
                        + String.join(", --", known.stream().sorted().toList()) + ")");
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(program + ": option " + flag + " needs a value");
            }
            if (a.values.put(flag.substring(2), args[++i]) != null) {
                throw new IllegalArgumentException(program + ": option " + flag + " given twice");
            }
        }
        return a;
    }

    String string(String name, String def) {
        return values.getOrDefault(name, def);
    }

    String required(String name) {
        String v = values.get(name);
        if (v == null) {
            throw new IllegalArgumentException(program + ": option --" + name + " is required");
        }
        return v;
    }

    long longValue(String name, long min, long max) {
        String v = required(name);
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(program + ": --" + name + " '" + v + "' is not an integer");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException(program + ": --" + name + " " + n + " is outside " + min + ".." + max);
        }
        return n;
    }

    double doubleValue(String name, double min, double max) {
        String v = required(name);
        double d;
        try {
            d = Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(program + ": --" + name + " '" + v + "' is not a number");
        }
        if (!(d >= min && d <= max)) {
            throw new IllegalArgumentException(program + ": --" + name + " " + v + " is outside " + min + ".." + max);
        }
        return d;
    }

    /** A comma-separated list of increasing iterations; "none" or empty for none. */
    long[] iterations(String name) {
        String v = required(name).strip();
        if (v.isEmpty() || v.toLowerCase(Locale.ROOT).equals("none")) {
            return new long[0];
        }
        try {
            long[] out = Arrays.stream(v.split(","))
                    .map(String::strip)
                    .mapToLong(Long::parseLong)
                    .toArray();
            for (int i = 1; i < out.length; i++) {
                if (out[i] <= out[i - 1]) {
                    throw new IllegalArgumentException(
                            program + ": --" + name + " must increase, got " + out[i] + " after " + out[i - 1]);
                }
            }
            return out;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    program + ": --" + name + " is not a list of iterations: " + e.getMessage());
        }
    }

    /** Reads a process's options; throws IllegalArgumentException naming the first bad one. */
    @FunctionalInterface
    public interface Parser<T> {
        T parse();
    }

    /** The body of a demo process's main. */
    @FunctionalInterface
    public interface Body<T> {
        void run(T options) throws Exception;
    }

    /**
     * Reads the options with {@code parser}, runs {@code body} and exits: 2 for bad arguments (one line on stderr), 1
     * for a failure (with its stack trace, for the driver's log), 0 otherwise.
     */
    public static <T> void runMain(String program, Parser<T> parser, Body<T> body) {
        T options;
        try {
            options = parser.parse();
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        try {
            body.run(options);
            System.exit(0);
        } catch (Exception e) {
            System.err.println(program + ": " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }
}
