package io.viper.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.CheckpointPolicy;
import io.viper.PublishHandle;
import io.viper.Viper;
import io.viper.ViperConfig;
import io.viper.ViperProducer;
import io.viper.errors.ViperException;
import io.viper.errors.ViperTimeoutException;
import io.viper.format.SafetensorsFile;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code viper publish}: publishes a safetensors file written by any tool as the next version of a model. */
@Command(
        name = "publish",
        mixinStandardHelpOptions = true,
        description = {
            "Publish a safetensors checkpoint (from PyTorch, JAX, ...) as the next version of a model.",
            "Announces it and serves it to consumers for --linger; prints one JSON line when announced."
        })
final class PublishCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, paramLabel = "NAME", description = "Model name")
    String model;

    @Option(names = "--file", required = true, paramLabel = "FILE", description = "The .safetensors file to publish")
    Path file;

    @Option(
            names = "--linger",
            paramLabel = "DURATION",
            defaultValue = "30s",
            converter = Durations.class,
            description = "How long to keep serving the staged model before exiting (default: ${DEFAULT-VALUE}; 0 exits"
                    + " once announced and flushed)")
    Duration linger;

    @Option(
            names = "--transports",
            paramLabel = "URIS",
            description =
                    "Transports to serve on, e.g. ucx://127.0.0.1:0,tcp://127.0.0.1:0 (default: every available one)")
    String transports;

    @Option(
            names = "--timeout",
            paramLabel = "DURATION",
            defaultValue = "60s",
            converter = Durations.class,
            description = "How long to wait for the notifier and the PFS flush (default: ${DEFAULT-VALUE})")
    Duration timeout;

    @Mixin
    CommonOptions common;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        common.config.refuseConflict("--transports", transports, ViperConfig.TRANSPORTS);
        Viper.Builder b = common.builder();
        if (transports != null) {
            b.transports(transports.split(",", -1));
        }
        // The notifier's own waits (the newest version at start, then the announcement) end within --timeout together.
        common.boundNotifierWaits(b, timeout);
        try (Progress progress = new Progress(spec.commandLine().getErr(), Progress.onTerminal(), false);
                SafetensorsFile f = SafetensorsFile.open(file);
                Viper viper = b.build();
                ViperProducer producer = viper.producer(model, CheckpointPolicy.never())) {
            long bytes = f.checkpoint(model, 0).totalBytes();
            progress.stage("publish " + model + ": copying into staging", bytes);
            PublishHandle h = producer.publish(f.checkpoint(model, 0));
            progress.stage("publish " + model + " v" + h.version() + ": hashing and announcing", bytes);
            Manifest announced = await(h.announced(), "announcing", deadline);
            progress.stage("publish " + model + " v" + h.version() + ": flushing to the PFS", bytes);
            Manifest durable = await(h.durable(), "flushing to the PFS", System.nanoTime() + timeout.toNanos());
            progress.close();
            ObjectNode o = new ObjectMapper().createObjectNode();
            o.put("model", model);
            o.put("version", h.version());
            o.put("bytes", announced.totalBytes());
            o.put("stall_ms", h.stallNanos() / 1e6);
            o.put("notifier", viper.notifierUri().toString());
            var locs = o.putArray("locations");
            for (Location l : durable.locations()) {
                locs.add(l.uri().toString());
            }
            PfsCopy.describe(durable.locations(), model, h.version()).ifPresent(pfs -> o.set("pfs", pfs));
            System.out.println(o);
            System.out.flush();
            if (!linger.isZero()) {
                Thread.sleep(linger.toMillis());
            }
        }
        return 0;
    }

    /**
     * Waits for {@code f} until {@code deadline} (announcing: {@code --timeout} after the command started, opening the
     * producer included).
     */
    private Manifest await(CompletableFuture<Manifest> f, String what, long deadline) throws InterruptedException {
        try {
            return f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new ViperTimeoutException(
                    "publishing " + model + ": " + what + " took longer than " + Durations.words(timeout));
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ViperException ve) {
                throw ve;
            }
            throw new ViperException(
                    ViperException.Reason.INTERNAL,
                    "publishing " + model + ": " + what + " failed: " + e.getCause(),
                    e.getCause());
        }
    }
}
