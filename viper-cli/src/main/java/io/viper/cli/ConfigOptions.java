package io.viper.cli;

import io.viper.config.ConfigKey;
import io.viper.errors.ViperConfigException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/**
 * {@code --config FILE} and {@code --set KEY=VALUE}: the settings of every command that opens a producer, consumer or
 * server.
 */
final class ConfigOptions {
    @Option(
            names = "--config",
            paramLabel = "FILE",
            description =
                    "Properties file of viper.* and kafka.* settings (key=value lines; `viper config` lists the keys)")
    Path configFile;

    @Option(
            names = "--set",
            paramLabel = "KEY=VALUE",
            description =
                    "One setting, e.g. --set viper.consumer.host.budget.bytes=8g (repeatable; `viper config` lists"
                            + " the keys)")
    Map<String, String> settings = new LinkedHashMap<>();

    /**
     * The file's settings once read: publish and consume ask for them twice (the builder, then the notifier's waits).
     */
    private Map<String, String> fileSettings;

    /**
     * Refuses {@code flag} given as {@code flagValue} (null: not given) where {@code --set} gives its key another
     * value. Without it one silently won: {@code --set viper.pfs.root} over {@code --pfs}, but {@code --transports}
     * over {@code --set viper.transports}.
     *
     * @throws ViperConfigException naming both
     */
    void refuseConflict(String flag, Object flagValue, ConfigKey<?> key) {
        String set = settings.get(key.name());
        if (flagValue != null && set != null && !set.equals(flagValue.toString())) {
            throw new ViperConfigException(
                    flag + " " + flagValue + " and --set " + key.name() + "=" + set + " disagree: give one of them");
        }
    }

    /** The {@code --config} file's settings, none without one; the file is read on the first call only. */
    Map<String, String> fileSettings() {
        if (fileSettings == null) {
            fileSettings = configFile == null ? Map.of() : ConfigFile.read(configFile);
        }
        return fileSettings;
    }

    /** The file's settings (if any) overridden by the {@code --set} ones, in that order. */
    Map<String, String> values() {
        Map<String, String> all = new LinkedHashMap<>(fileSettings());
        all.putAll(settings);
        return all;
    }
}
