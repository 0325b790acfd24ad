package io.viper.demo.internal;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The command-line options of the demo's producer and consumer processes, written by the driver
 * ({@link #args}) and read by the process ({@link #producer(String[])}, {@link #consumer(String[])}) in
 * this one place, so that the two sides agree on every name.
 */
public final class ProcessOptions {
    private static final String ITERATIONS = "iterations";
    private static final String WARMUP = "warmup";
    private static final String SEED = "seed";
    private static final String PACE_US = "pace-us";
    private static final String NOTIFIER = "notifier";
    private static final String PFS = "pfs";
    private static final String CHECKPOINTS = "checkpoints";
    private static final String TRANSPORTS = "transports";
    private static final String RATE = "rate";
    private static final String PATHS = "paths";
    private static final Set<String> RUN = Set.of(ITERATIONS, WARMUP, SEED, PACE_US, NOTIFIER, PFS);

    private ProcessOptions() {
    }

    /**
     * What both processes share: the run's iterations, warm-up end and seed, the pace of the shared
     * clock (whole microseconds), the notifier, and the PFS repository when checkpoints travel by file.
     */
    public record Run(long end, long warmup, long seed, long paceMicros, String notifier, Optional<Path> pfs) {
    }

    /** The producer's options: publish at {@code checkpoints}, serving on {@code transports} (none: PFS only). */
    public record Producer(Run run, long[] checkpoints, List<String> transports) {
    }

    /** The consumer's options: {@code rate} requests per second, fetching by {@code paths}. */
    public record Consumer(Run run, double rate, List<String> paths) {
    }

    /** The producer's command-line arguments. */
    public static List<String> args(Producer p) {
        List<String> a = args(p.run());
        a.addAll(List.of("--" + CHECKPOINTS, p.checkpoints().length == 0 ? "none"
                        : Arrays.stream(p.checkpoints()).mapToObj(Long::toString).collect(Collectors.joining(",")),
                "--" + TRANSPORTS, p.transports().isEmpty() ? "none" : String.join(",", p.transports())));
        return a;
    }

    /** The consumer's command-line arguments. */
    public static List<String> args(Consumer c) {
        List<String> a = args(c.run());
        a.addAll(List.of("--" + RATE, Double.toString(c.rate()), "--" + PATHS, String.join(",", c.paths())));
        return a;
    }

    private static List<String> args(Run r) {
        List<String> a = new ArrayList<>(List.of("--" + ITERATIONS, Long.toString(r.end()), "--" + WARMUP, Long.toString(r.warmup()),
                "--" + SEED, Long.toString(r.seed()), "--" + PACE_US, Long.toString(r.paceMicros()), "--" + NOTIFIER, r.notifier()));
        r.pfs().ifPresent(p -> a.addAll(List.of("--" + PFS, p.toString())));
        return a;
    }

    /**
     * Reads the producer's arguments.
     *
     * @throws IllegalArgumentException naming the first unknown, repeated, missing or malformed option
     */
    public static Producer producer(String[] argv) {
        DemoArgs a = DemoArgs.parse("DemoProducer", argv, with(CHECKPOINTS, TRANSPORTS));
        String transports = a.required(TRANSPORTS).strip();
        return new Producer(run(a), a.iterations(CHECKPOINTS), transports.equals("none") ? List.of() : List.of(transports.split(",")));
    }

    /**
     * Reads the consumer's arguments.
     *
     * @throws IllegalArgumentException naming the first unknown, repeated, missing or malformed option
     */
    public static Consumer consumer(String[] argv) {
        DemoArgs a = DemoArgs.parse("DemoConsumer", argv, with(RATE, PATHS));
        return new Consumer(run(a), a.doubleValue(RATE, 1e-3, 1e6), List.of(a.required(PATHS).split(",")));
    }

    private static Set<String> with(String... more) {
        return java.util.stream.Stream.concat(RUN.stream(), Arrays.stream(more)).collect(Collectors.toUnmodifiableSet());
    }

    private static Run run(DemoArgs a) {
        long end = a.longValue(ITERATIONS, 2, 10_000_000);
        return new Run(end, a.longValue(WARMUP, 1, end - 1), a.longValue(SEED, Long.MIN_VALUE, Long.MAX_VALUE),
                a.longValue(PACE_US, 1, 10_000_000), a.required(NOTIFIER), Optional.ofNullable(a.string(PFS, null)).map(Path::of));
    }
}
