package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code ./viper} wrapper builds the CLI once when several commands start at once on a stale build: the others wait
 * for that build and then run. It runs here in a copy of the repository's layout whose Maven wrapper, set-up script and
 * java are stand-ins that count their calls (a real build takes minutes).
 */
class WrapperBuildLockTest {
    @TempDir
    Path root;

    @Test
    void threeCommandsAtOnceOnAStaleBuildBuildOnce() throws Exception {
        Path repo = Path.of(System.getProperty("viper.testdata", "../testdata"))
                .toAbsolutePath()
                .normalize()
                .getParent();
        Files.copy(repo.resolve("viper"), root.resolve("viper"));
        Files.createDirectories(root.resolve("scripts"));
        Path jdk = Files.createDirectories(root.resolve("jdk/bin"));
        Files.writeString(root.resolve("scripts/java-env.sh"), "export JAVA_HOME=\"" + root.resolve("jdk") + "\"\n");
        script(root.resolve("scripts/setup-system.sh"), "true");
        // The stand-in build takes a while, so that the commands overlap, and counts itself.
        script(
                root.resolve("mvnw"),
                "echo build >> \"" + root.resolve("builds") + "\"; sleep 1; mkdir -p viper-cli/target/viper-lib");
        script(jdk.resolve("java"), "echo ran >> \"" + root.resolve("runs") + "\"");
        executable(root.resolve("viper"));

        List<Process> commands = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            commands.add(new ProcessBuilder("bash", root.resolve("viper").toString(), "--version")
                    .redirectErrorStream(true)
                    .redirectOutput(root.resolve("out" + i).toFile())
                    .start());
        }
        for (Process p : commands) {
            p.waitFor(60, TimeUnit.SECONDS);
            assertEquals(0, p.exitValue(), Files.readString(root.resolve("out" + commands.indexOf(p))));
        }
        assertEquals(List.of("build"), Files.readAllLines(root.resolve("builds")), "one build");
        assertEquals(3, Files.readAllLines(root.resolve("runs")).size(), "every command ran");
    }

    private static void script(Path file, String body) throws IOException {
        Files.writeString(file, "#!/usr/bin/env bash\n" + body + "\n");
        executable(file);
    }

    private static void executable(Path file) throws IOException {
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
}
