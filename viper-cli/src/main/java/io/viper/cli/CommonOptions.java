package io.viper.cli;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.errors.ViperConfigException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * Options every command that talks to producers and consumers shares: notifier, PFS root, a configuration file, single
 * settings, metrics endpoint and verbosity.
 */
final class CommonOptions {
    /** The notifier where neither {@code --notifier}, the {@code --config} file nor {@code --set} names one. */
    static final String DEFAULT_NOTIFIER = "embedded://127.0.0.1:7800";

    // No picocli default: one here was applied over the --config file's viper.notifier, which was then ignored.
    @Option(
            names = "--notifier",
            paramLabel = "URI",
            description = "embedded://host:port or kafka://host:port[,host:port][?topic=T] (default: viper.notifier of"
                    + " --config or --set, else "
                    + DEFAULT_NOTIFIER + ")")
    String notifier;

    @Option(
            names = "--pfs",
            paramLabel = "DIR",
            description = "PFS repository root: producers flush there, consumers fall back to it")
    Path pfs;

    @Mixin
    ConfigOptions config;

    @Option(
            names = "--metrics-port",
            paramLabel = "PORT",
            description = "Serve Prometheus metrics on http://HOST:PORT/metrics (see --metrics-host)")
    Integer metricsPort;

    @Option(
            names = "--metrics-host",
            paramLabel = "HOST",
            defaultValue = "127.0.0.1",
            description = "Address the metrics endpoint binds (default: ${DEFAULT-VALUE}; 0.0.0.0 in containers)")
    String metricsHost;

    @Option(
            names = {"-v", "--verbose"},
            description = "Log what Viper does (path choices, transfers) on stderr")
    boolean verbose;

    /** Applies logging, loads the config file, starts the metrics endpoint; returns a builder. */
    Viper.Builder builder() {
        CliLogging.configure(verbose);
        Viper.Builder b = Viper.builder();
        config.refuseConflict("--notifier", notifier, ViperConfig.NOTIFIER);
        config.refuseConflict("--pfs", pfs, ViperConfig.PFS_ROOT);
        Map<String, String> file = config.fileSettings();
        b.config(file);
        b.notifier(notifierUri(notifier, file));
        if (pfs != null) {
            b.pfsRoot(pfs);
        }
        config.settings.forEach(b::config);
        if (metricsPort != null) {
            startMetrics(metricsHost, metricsPort);
        }
        return b;
    }

    /**
     * The notifier to set before {@code --set} (which overrides it) applies: {@code --notifier}, else the
     * {@code --config} file's {@code viper.notifier}, else {@link #DEFAULT_NOTIFIER}.
     */
    static String notifierUri(String flag, Map<String, String> file) {
        return flag != null ? flag : file.getOrDefault(ViperConfig.NOTIFIER.name(), DEFAULT_NOTIFIER);
    }

    /**
     * Makes the notifier's own waits end within a command's {@code timeout}: sets {@code viper.notify.timeout.ms} on
     * {@code b} to {@link #notifyTimeoutMs}. Without it a broker that is not there keeps each wait for 30 s: publish
     * waits twice (the newest version as the producer opens, then the announcement), and consume's follower did not
     * report an unreachable Kafka before a {@code --timeout} under 5 s ended, so the command said only that no update
     * came.
     */
    void boundNotifierWaits(Viper.Builder b, Duration timeout) {
        b.config(ViperConfig.NOTIFY_TIMEOUT_MS.name(), Long.toString(notifyTimeoutMs(timeout, config.values())));
    }

    /**
     * {@code viper.notify.timeout.ms} as the settings give it (the file's, then {@code --set}'s, else its default), but
     * no longer than half of {@code timeout}, so that two waits one after the other end within it; at least 1 ms.
     */
    static long notifyTimeoutMs(Duration timeout, Map<String, String> settings) {
        long configured = ViperConfig.NOTIFY_TIMEOUT_MS.parse(settings.get(ViperConfig.NOTIFY_TIMEOUT_MS.name()));
        return Math.max(1, Math.min(configured, timeout.toMillis() / 2));
    }

    /**
     * The JVM's and the process's own meters (Micrometer's binders: heap and GC, threads, classes, CPU, uptime, open
     * files) on the endpoint's registry only: an application embedding the SDK chooses its own.
     */
    @SuppressWarnings("resource") // the GC binder listens for the process's lifetime, as the endpoint serves
    static void bindJvmAndProcess(MeterRegistry registry) {
        new ClassLoaderMetrics().bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
    }

    private static void startMetrics(String host, int port) {
        if (port < 0 || port > 65535) {
            throw new ViperConfigException("--metrics-port " + port + " is not a port number");
        }
        PrometheusMeterRegistry prometheus = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        bindJvmAndProcess(prometheus);
        Metrics.addRegistry(prometheus);
        try {
            HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 16);
            server.createContext("/metrics", exchange -> {
                byte[] body = prometheus.scrape().getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
                exchange.sendResponseHeaders(200, body.length);
                try (var out = exchange.getResponseBody()) {
                    out.write(body);
                }
            });
            server.setExecutor(null);
            Thread t = Thread.ofPlatform().daemon().name("viper-metrics").unstarted(server::start);
            t.start();
        } catch (IOException e) {
            throw new ViperConfigException("cannot serve metrics on " + host + ":" + port + ": " + e.getMessage());
        }
    }
}
