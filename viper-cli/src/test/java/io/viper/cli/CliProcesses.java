package io.viper.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Starts {@code viper} commands as separate JVMs with the test class path, for integration tests. */
final class CliProcesses {
    private CliProcesses() {}

    static ProcessBuilder viper(Path workDir, String... args) {
        List<String> cmd = new ArrayList<>(List.of(
                ProcessHandle.current()
                        .info()
                        .command()
                        .orElse(Path.of(System.getProperty("java.home"), "bin", "java")
                                .toString()),
                "--enable-native-access=ALL-UNNAMED",
                "-Xmx256m",
                "-cp",
                System.getProperty("java.class.path"),
                ViperMain.class.getName()));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).directory(workDir.toFile());
    }
}
