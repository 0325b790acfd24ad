package io.viper.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.ModelLease;
import io.viper.ModelUpdate;
import io.viper.TensorSet;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperConsumer;
import io.viper.errors.ViperConfigException;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import io.viper.format.SafetensorsWriter;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.PatternSyntaxException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code viper consume}: follows a model and prints one JSON line per update. */
@Command(
        name = "consume",
        mixinStandardHelpOptions = true,
        description = {
            "Follow a model like an inference server would: pull and verify every newer version.",
            "Prints one JSON line per update"
                    + " {\"model\",\"version\",\"path\",\"bytes\",\"reused_bytes\",\"latency_ms\"}:",
            "bytes moved, and bytes of unchanged blocks not moved (left in place or copied from the version held);"
                    + " bytes_from_producer, bytes_from_relays and bytes_from_pfs split the bytes moved by source."
        })
final class ConsumeCommand implements Callable<Integer> {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Option(names = "--model", required = true, paramLabel = "NAME", description = "Model name")
    String model;

    @Option(names = "--once", description = "Exit after the first update")
    boolean once;

    @Option(
            names = "--out",
            paramLabel = "DIR",
            description = "Write each version to DIR/<model>-v<version>.safetensors")
    Path out;

    @Option(
            names = "--out-keep",
            paramLabel = "N",
            defaultValue = "3",
            description = "Keep the N newest versions this command wrote to --out, deleting older ones as newer arrive"
                    + " (default: ${DEFAULT-VALUE}; 0 keeps every version)")
    int outKeep;

    @Option(
            names = "--tensors",
            paramLabel = "GLOB",
            description = "Pull only the tensors whose names match GLOB (e.g. 'dense.*'), not the whole model")
    String tensors;

    @Option(
            names = "--paths",
            paramLabel = "SCHEMES",
            description = "Transports this consumer may use, e.g. tcp,file (default: any available)")
    String paths;

    @Option(
            names = "--relay",
            paramLabel = "URIS",
            description = "Serve the blocks this consumer verified to other consumers on these transports, e.g."
                    + " tcp://10.0.0.2:0 (viper.consumer.relay.transports); the producer's tracker sends readers here")
    String relay;

    @Option(
            names = "--timeout",
            paramLabel = "DURATION",
            converter = Durations.class,
            description = "Give up (exit 3) when no update arrived for this long (default: wait forever)")
    Duration timeout;

    @Mixin
    CommonOptions common;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        if (paths != null && paths.isBlank()) {
            throw new ViperConfigException(
                    "--paths is empty: name the transports this consumer may use (e.g. tcp,file), or leave it out for"
                            + " any available");
        }
        common.config.refuseConflict("--paths", paths, ViperConfig.CONSUMER_PATHS);
        common.config.refuseConflict("--relay", relay, ViperConfig.CONSUMER_RELAY_TRANSPORTS);
        PathMatcher matcher = tensors == null ? null : glob(tensors); // checked before --out's directory is made
        Viper.Builder b = common.builder();
        if (paths != null) {
            b.consumerPaths(paths.split(",", -1));
        }
        if (tensors != null) {
            b.config("viper.consumer.autoload", "false");
        }
        if (relay != null) {
            b.config(ViperConfig.CONSUMER_RELAY_TRANSPORTS.name(), relay);
        }
        if (timeout != null) {
            // The notifier reports a broker it cannot reach (a warning) before --timeout ends.
            common.boundNotifierWaits(b, timeout);
        }
        if (outKeep < 0) {
            throw new ViperConfigException("--out-keep " + outKeep + ": give 0 (keep every version) or more");
        }
        if (out != null) {
            createOutDirectory(out);
        }
        OutRetention written = new OutRetention(outKeep);
        BlockingQueue<Object> events = new LinkedBlockingQueue<>();
        try (Progress progress = new Progress(spec.commandLine().getErr(), Progress.onTerminal(), false);
                Viper viper = b.build();
                ViperConsumer consumer = viper.consumer(model)) {
            progress.stage("consume " + model + ": waiting for a version", -1);
            if (matcher == null) {
                consumer.onUpdate(events::add);
            } else {
                consumer.onManifest(events::add);
            }
            consumer.onFailure(events::add);
            long lastVersion = 0;
            while (true) {
                Object e = timeout == null ? events.take() : events.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
                if (e == null) {
                    progress.close();
                    spec.commandLine()
                            .getErr()
                            .println("viper: no update of " + model + " within " + Durations.words(timeout)
                                    + whyNoUpdate(consumer));
                    return ViperMain.EXIT_NO_UPDATE;
                }
                if (e instanceof ViperException failure) {
                    throw failure; // no update will come: the broker or the producers refused this consumer's
                    // credentials or TLS trust
                }
                long v;
                if (e instanceof ModelUpdate u) {
                    v = u.version();
                    if (out != null) {
                        // replace, not write: a link planted in DIR is replaced, never written through
                        try (ModelLease lease = consumer.current()) {
                            if (lease.version() == v) {
                                Path file = out.resolve(model + "-v" + v + ".safetensors");
                                SafetensorsWriter.replace(file, lease.checkpoint());
                                written.wrote(file);
                            }
                        }
                    }
                    progress.clear();
                    print(u.model(), v, u.path(), u.bytes(), u.reusedBytes(), u.latencyMs(), new long[] {
                        u.bytesFromProducer(), u.bytesFromRelays(), u.bytesFromPfs()
                    });
                    progress.stage(waiting(v, u.bytes(), u.latencyMs()), -1);
                } else {
                    Manifest m = (Manifest) e;
                    v = m.version();
                    if (v <= lastVersion) {
                        continue;
                    }
                    Set<String> names = new LinkedHashSet<>();
                    for (TensorEntry t : m.tensors()) {
                        if (matcher.matches(Path.of(t.name()))) {
                            names.add(t.name());
                        }
                    }
                    if (names.isEmpty()) {
                        throw new ViperConfigException(
                                "no tensor of " + model + " v" + v + " matches --tensors '" + tensors + "'");
                    }
                    try (TensorSet set = fetchWithRetry(consumer, v, names)) {
                        if (out != null) {
                            Path file = out.resolve(model + "-v" + v + ".safetensors");
                            SafetensorsWriter.replace(file, set.tensors(), m.metadata());
                            written.wrote(file);
                        }
                        progress.clear();
                        print(
                                model,
                                v,
                                set.location().scheme(),
                                set.bytes(),
                                set.reusedBytes(),
                                m.millisSincePublished(),
                                set.location().tier() == Tier.PFS
                                        ? new long[] {0, 0, set.bytes()}
                                        : new long[] {set.bytes(), 0, 0});
                    }
                }
                lastVersion = Math.max(lastVersion, v);
                if (once) {
                    return 0;
                }
            }
        }
    }

    /**
     * Refuses an {@code --out} that names a file, or a path below one, before anything is consumed; creates a missing
     * one.
     */
    private static void createOutDirectory(Path dir) {
        for (Path p = dir.toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.exists(p)) {
                if (!Files.isDirectory(p)) {
                    throw new ViperConfigException(
                            "--out " + dir + ": not a directory" + (p.endsWith(dir) ? "" : " (" + p + " is a file)"));
                }
                break;
            }
        }
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            String reason =
                    e instanceof FileSystemException fse && fse.getReason() != null ? fse.getReason() : e.getMessage();
            throw new ViperException(
                    ViperException.Reason.IO, "--out " + dir + ": cannot create the directory: " + reason, e);
        }
    }

    private static PathMatcher glob(String pattern) {
        if (pattern.isBlank()) {
            // It would match no tensor of any version: the consumer would wait out --timeout for nothing.
            throw new ViperConfigException(
                    "--tensors is empty: give a glob of tensor names (e.g. 'dense.*'), or leave it out for the whole"
                            + " model");
        }
        try {
            return FileSystems.getDefault().getPathMatcher("glob:" + pattern);
        } catch (PatternSyntaxException e) {
            throw new ViperConfigException("--tensors '" + pattern + "' is not a glob: " + e.getDescription()
                    + (e.getIndex() >= 0 ? " at position " + (e.getIndex() + 1) : ""));
        }
    }

    /**
     * ": " and why no newer version serves, where one announced failed to load (its producer gone, say): the consumer's
     * wait, given no time, names that failure as its cause. Else "".
     */
    private static String whyNoUpdate(ViperConsumer consumer) {
        try {
            consumer.awaitVersion(consumer.version() + 1, Duration.ZERO);
        } catch (ViperTimeoutException e) {
            return e.getCause() == null ? "" : ": " + e.getCause().getMessage();
        }
        return "";
    }

    /** The PFS location may be announced a moment after the first manifest: retry briefly. */
    private static TensorSet fetchWithRetry(ViperConsumer consumer, long v, Set<String> names)
            throws InterruptedException {
        ViperException last = null;
        for (int i = 0; i < 20; i++) {
            try {
                return consumer.fetch(v, names);
            } catch (ViperException e) {
                if (!e.isRetriable()) {
                    throw e;
                }
                last = e;
                Thread.sleep(250);
            }
        }
        throw last;
    }

    /** The status line between updates: the version served, what its update moved, and the wait since. */
    private String waiting(long version, long bytes, double latencyMs) {
        return "consume " + model + ": v" + version + " arrived (" + Progress.bytes(bytes) + " in "
                + Math.round(latencyMs) + " ms); waiting for the next";
    }

    /** @param bySource bytes from the producer, from relays and from the PFS */
    private static void print(
            String model, long version, String path, long bytes, long reusedBytes, double latencyMs, long[] bySource) {
        ObjectNode o = JSON.createObjectNode();
        o.put("model", model);
        o.put("version", version);
        o.put("path", path);
        o.put("bytes", bytes);
        o.put("reused_bytes", reusedBytes);
        o.put("latency_ms", Math.round(latencyMs * 1000) / 1000.0);
        o.put("bytes_from_producer", bySource[0]);
        o.put("bytes_from_relays", bySource[1]);
        o.put("bytes_from_pfs", bySource[2]);
        System.out.println(o);
        System.out.flush();
    }
}
