package io.viper.internal.producer;

import io.viper.errors.ViperConfigException;
import io.viper.manifest.Manifest;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.Notifier;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.LongSupplier;

/**
 * Where a starting producer's version numbers begin (docs/architecture.md#versions), so that the versions of a model
 * are unique and increasing across producer restarts whatever the deployment: after the newest version the PFS
 * repository holds (once {@link CheckpointRepository#recover} has cleaned up after a crash) and after the newest one
 * the notifier announced. When the notifier cannot know what consumers were told before (an embedded broker this
 * producer just started on a fixed port), the producer starts a new epoch: its first version is the wall clock in
 * milliseconds, above anything an earlier producer numbered the same way unless that one published more versions than
 * milliseconds passed. Called once, on the thread creating the producer.
 */
final class VersionStart {
    private static final System.Logger LOG = System.getLogger(VersionStart.class.getName());

    private VersionStart() {}

    /** The version before the producer's first one: its first publish is this plus one. */
    static long lastUsed(
            String model, Optional<CheckpointRepository> repository, Notifier notifier, LongSupplier clockMillis) {
        long stored = repository.map(r -> r.recover(model)).orElse(0L);
        OptionalLong announced = notifier.latestVersion(model);
        long last;
        if (announced.isPresent()) {
            last = Math.max(stored, announced.getAsLong());
        } else {
            last = Math.max(stored, clockMillis.getAsLong() - 1);
            LOG.log(
                    System.Logger.Level.INFO,
                    "producer {0}: {1} cannot tell which versions consumers saw before; numbering from v{2} (the"
                            + " clock)",
                    model,
                    notifier.uri(),
                    Long.toString(last + 1));
        }
        if (last >= Manifest.MAX_VERSION) {
            throw new ViperConfigException("producer " + model + ": the newest known version is " + last
                    + ", there is no version after it (at most " + Manifest.MAX_VERSION + ")");
        }
        return last;
    }
}
