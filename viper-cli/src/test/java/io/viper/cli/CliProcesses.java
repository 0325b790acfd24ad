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

    /**
     * The project's {@code testdata} folder: {@code -Dviper.testdata} (the parent pom sets it), else
     * {@code ../testdata} from the module directory (a run from an IDE).
     *
     * @throws IllegalStateException when neither is a folder: the checkout is incomplete
     */
    static Path testdata() {
        Path p = Path.of(System.getProperty("viper.testdata", "../testdata"))
                .toAbsolutePath()
                .normalize();
        if (!p.toFile().isDirectory()) {
            throw new IllegalStateException(
                    "test data folder " + p + " does not exist (set -Dviper.testdata to the repository's testdata/)");
        }
        return p;
    }
}
