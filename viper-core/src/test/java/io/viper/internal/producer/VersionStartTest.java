package io.viper.internal.producer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.viper.errors.ViperConfigException;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.CheckpointRepository;
import io.viper.spi.Notifier;
import io.viper.spi.StagedCheckpoint;
import java.net.URI;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * Where a starting producer's versions begin: after everything the repository and the notifier know, else at the clock.
 */
class VersionStartTest {
    private static Notifier notifierKnowing(OptionalLong latest) {
        return new Notifier() {
            @Override
            public URI uri() {
                return URI.create("test://n");
            }

            @Override
            public void publish(Manifest manifest) {}

            @Override
            public OptionalLong latestVersion(String model) {
                return latest;
            }

            @Override
            public Subscription subscribe(String model, ManifestListener listener) {
                return () -> {};
            }

            @Override
            public void close() {}
        };
    }

    private static Optional<CheckpointRepository> repositoryHolding(long newest) {
        return Optional.of(new CheckpointRepository() {
            @Override
            public Location store(Manifest manifest, StagedCheckpoint staged) {
                throw new AssertionError("VersionStart only reads the repository's versions; it never stores");
            }

            @Override
            public Optional<Manifest> latest(String model) {
                return Optional.empty();
            }

            @Override
            public Optional<Manifest> find(String model, long version) {
                return Optional.empty();
            }

            @Override
            public List<Long> versions(String model) {
                return newest == 0 ? List.of() : List.of(newest);
            }

            @Override
            public void close() {}
        });
    }

    @Test
    void theNewestOfRepositoryAndNotifierWins() {
        assertEquals(
                7,
                VersionStart.lastUsed("m", repositoryHolding(5), notifierKnowing(OptionalLong.of(7)), () -> 1_000_000));
        assertEquals(
                9,
                VersionStart.lastUsed("m", repositoryHolding(9), notifierKnowing(OptionalLong.of(7)), () -> 1_000_000));
        assertEquals(
                0,
                VersionStart.lastUsed("m", Optional.empty(), notifierKnowing(OptionalLong.of(0)), () -> 1_000_000),
                "a fresh deployment starts at v1");
    }

    @Test
    void aNotifierWithoutHistoryStartsANewEpochAtTheClock() {
        assertEquals(
                1_699_999,
                VersionStart.lastUsed("m", Optional.empty(), notifierKnowing(OptionalLong.empty()), () -> 1_700_000));
        assertEquals(
                2_000_000,
                VersionStart.lastUsed(
                        "m", repositoryHolding(2_000_000), notifierKnowing(OptionalLong.empty()), () -> 1_700_000),
                "never below what the repository holds");
    }

    @Test
    void aPoisonedLatestVersionLeavesNoRoomAndIsRefused() {
        assertThrows(
                ViperConfigException.class,
                () -> VersionStart.lastUsed(
                        "m", Optional.empty(), notifierKnowing(OptionalLong.of(Manifest.MAX_VERSION)), () -> 1));
    }
}
