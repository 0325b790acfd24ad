package io.viper.demo.internal;

import io.viper.demo.DemoTransport;
import io.viper.demo.DemoWorkload;
import io.viper.scheduler.OnlineCheckpointPolicy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The command-line options of the demo's producer and consumer processes, written by the driver ({@link #args}) and
 * read by the process ({@link #producer(String[])}, {@link #consumer(String[])}) in this one place, so that the two
 * sides agree on every name.
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
    private static final String WORKLOAD = "workload";
    private static final String ONLINE = "online";
    private static final String REPLICAS = "replicas";
    private static final String TRANSPORT = "transport";
    private static final Set<String> RUN =
            Set.of(ITERATIONS, WARMUP, SEED, PACE_US, NOTIFIER, PFS, WORKLOAD, TRANSPORT);
    private static final List<String> ONLINE_KEYS =
            List.of("budget", "spacing", "threshold", "burst", "gain", "hold", "refit", "t_save", "t_load", "t_infer");

    /**
     * The notifier a consumer is started with when the driver sends it on standard input ({@link DemoEvents#notifier}).
     */
    public static final String NOTIFIER_FROM_DRIVER = "-";

    private ProcessOptions() {}

    /**
     * What both processes share: the run's iterations, warm-up end and seed, the pace of the shared clock (whole
     * microseconds), the notifier, the PFS repository when checkpoints travel by file, the workload, and the transport
     * (each process warms its side of the data path up over it first).
     */
    public record Run(
            long end,
            long warmup,
            long seed,
            long paceMicros,
            String notifier,
            Optional<Path> pfs,
            DemoWorkload workload,
            DemoTransport transport) {}

    /**
     * The producer's options: publish at {@code checkpoints}, or decide online with {@code online}; serving on
     * {@code transports} (none: PFS only).
     */
    public record Producer(Run run, long[] checkpoints, List<String> transports, Optional<Online> online) {}

    /**
     * The online policy's settings and the costs its re-plans use.
     *
     * @param config the policy's settings
     * @param tSave the producer stall per checkpoint, seconds
     * @param tLoad the update latency, seconds
     * @param tInfer seconds per request
     */
    public record Online(OnlineCheckpointPolicy.Config config, double tSave, double tLoad, double tInfer) {}

    /**
     * The consumer's options: {@code rate} requests per second, fetching by {@code paths}, each request asked of
     * {@code replicas} replicas.
     */
    public record Consumer(Run run, double rate, List<String> paths, int replicas) {}

    /** The producer's command-line arguments. */
    public static List<String> args(Producer p) {
        List<String> a = args(p.run());
        a.addAll(List.of(
                "--" + CHECKPOINTS,
                p.checkpoints().length == 0
                        ? "none"
                        : Arrays.stream(p.checkpoints())
                                .mapToObj(Long::toString)
                                .collect(Collectors.joining(",")),
                "--" + TRANSPORTS,
                p.transports().isEmpty() ? "none" : String.join(",", p.transports())));
        p.online().ifPresent(o -> a.addAll(List.of("--" + ONLINE, encode(o))));
        return a;
    }

    /** The consumer's command-line arguments. */
    public static List<String> args(Consumer c) {
        List<String> a = args(c.run());
        a.addAll(List.of(
                "--" + RATE,
                Double.toString(c.rate()),
                "--" + PATHS,
                String.join(",", c.paths()),
                "--" + REPLICAS,
                Integer.toString(c.replicas())));
        return a;
    }

    private static List<String> args(Run r) {
        List<String> a = new ArrayList<>(List.of(
                "--" + ITERATIONS,
                Long.toString(r.end()),
                "--" + WARMUP,
                Long.toString(r.warmup()),
                "--" + SEED,
                Long.toString(r.seed()),
                "--" + PACE_US,
                Long.toString(r.paceMicros()),
                "--" + NOTIFIER,
                r.notifier(),
                "--" + WORKLOAD,
                r.workload().displayName(),
                "--" + TRANSPORT,
                r.transport().displayName()));
        r.pfs().ifPresent(p -> a.addAll(List.of("--" + PFS, p.toString())));
        return a;
    }

    /** {@code budget=45,spacing=4,...}: every number exactly, in the order of {@link #ONLINE_KEYS}. */
    private static String encode(Online o) {
        OnlineCheckpointPolicy.Config c = o.config();
        Object[] values = {
            c.budget(),
            c.minSpacing(),
            c.initialThreshold(),
            c.burst(),
            c.gain(),
            c.holdAfterChange(),
            c.refitEvery(),
            o.tSave(),
            o.tLoad(),
            o.tInfer()
        };
        List<String> parts = new ArrayList<>();
        for (int i = 0; i < values.length; i++) {
            parts.add(ONLINE_KEYS.get(i) + "=" + values[i]);
        }
        return String.join(",", parts);
    }

    private static Online decodeOnline(String text, Run run) {
        Map<String, String> kv = new HashMap<>();
        for (String part : text.split(",")) {
            int eq = part.indexOf('=');
            if (eq < 0
                    || !ONLINE_KEYS.contains(part.substring(0, eq))
                    || kv.put(part.substring(0, eq), part.substring(eq + 1)) != null) {
                throw new IllegalArgumentException(
                        "DemoProducer: --online '" + text + "' is not " + String.join("=..,", ONLINE_KEYS) + "=..");
            }
        }
        if (kv.size() != ONLINE_KEYS.size()) {
            throw new IllegalArgumentException(
                    "DemoProducer: --online needs every one of " + String.join(", ", ONLINE_KEYS));
        }
        try {
            double tTrain = run.paceMicros() / 1e6;
            double tInfer = Double.parseDouble(kv.get("t_infer"));
            OnlineCheckpointPolicy.Config c = new OnlineCheckpointPolicy.Config(
                    run.warmup(),
                    run.end(),
                    Integer.parseInt(kv.get("budget")),
                    tTrain / tInfer,
                    Long.parseLong(kv.get("spacing")),
                    Double.parseDouble(kv.get("threshold")),
                    Integer.parseInt(kv.get("burst")),
                    Double.parseDouble(kv.get("gain")),
                    Long.parseLong(kv.get("hold")),
                    Long.parseLong(kv.get("refit")));
            return new Online(c, Double.parseDouble(kv.get("t_save")), Double.parseDouble(kv.get("t_load")), tInfer);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("DemoProducer: --online '" + text + "': " + e.getMessage());
        }
    }

    /**
     * Reads the producer's arguments.
     *
     * @throws IllegalArgumentException naming the first unknown, repeated, missing or malformed option
     */
    public static Producer producer(String[] argv) {
        DemoArgs a = DemoArgs.parse("DemoProducer", argv, with(CHECKPOINTS, TRANSPORTS, ONLINE));
        String transports = a.required(TRANSPORTS).strip();
        Run run = run(a);
        Optional<Online> online = Optional.ofNullable(a.string(ONLINE, null)).map(t -> decodeOnline(t, run));
        return new Producer(
                run,
                a.iterations(CHECKPOINTS),
                transports.equals("none") ? List.of() : List.of(transports.split(",")),
                online);
    }

    /**
     * Reads the consumer's arguments.
     *
     * @throws IllegalArgumentException naming the first unknown, repeated, missing or malformed option
     */
    public static Consumer consumer(String[] argv) {
        DemoArgs a = DemoArgs.parse("DemoConsumer", argv, with(RATE, PATHS, REPLICAS));
        return new Consumer(
                run(a),
                a.doubleValue(RATE, 1e-3, 1e6),
                List.of(a.required(PATHS).split(",")),
                (int) a.longValue(REPLICAS, 1, 1000));
    }

    private static Set<String> with(String... more) {
        return Stream.concat(RUN.stream(), Arrays.stream(more)).collect(Collectors.toUnmodifiableSet());
    }

    private static Run run(DemoArgs a) {
        long end = a.longValue(ITERATIONS, 2, 10_000_000);
        DemoWorkload workload;
        try {
            workload = DemoWorkload.parse(a.required(WORKLOAD));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("demo process: " + e.getMessage());
        }
        String transport = a.required(TRANSPORT);
        return new Run(
                end,
                a.longValue(WARMUP, 1, end - 1),
                a.longValue(SEED, Long.MIN_VALUE, Long.MAX_VALUE),
                a.longValue(PACE_US, 1, 10_000_000),
                a.required(NOTIFIER),
                Optional.ofNullable(a.string(PFS, null)).map(Path::of),
                workload,
                DemoTransport.byName(transport)
                        .orElseThrow(() -> new IllegalArgumentException(
                                "demo process: --transport " + transport + ": not " + DemoTransport.names())));
    }
}
