package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.testing.TestData;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code ./viper} wrapper: it builds the CLI once when several commands start at once on a stale build (the others
 * wait for that build and then run), trains the JVM's AOT cache once per build, and runs each command with that cache
 * only while the jars are the ones it was trained with. It runs here in a copy of the repository's layout whose Maven
 * wrapper, set-up script and java are stand-ins that log their calls (a real build takes minutes): the stand-in java
 * writes the file {@code -XX:AOTCacheOutput} names, as a training run does.
 */
class ViperWrapperTest {
    @TempDir
    Path root;

    private Path lib;

    @BeforeEach
    void layout() throws IOException {
        Path repo = TestData.root().getParent();
        Files.copy(repo.resolve("viper"), root.resolve("viper"));
        executable(root.resolve("viper"));
        Files.createDirectories(root.resolve("scripts"));
        Path jdk = Files.createDirectories(root.resolve("jdk/bin"));
        Files.writeString(root.resolve("scripts/java-env.sh"), "export JAVA_HOME=\"" + root.resolve("jdk") + "\"\n");
        script(root.resolve("scripts/setup-system.sh"), "true");
        lib = root.resolve("viper-cli/target/viper-lib");
        // The stand-in build takes a while, so that the commands overlap, logs itself and leaves a jar.
        script(
                root.resolve("mvnw"),
                "echo build >> \"" + root.resolve("builds") + "\"; sleep 1; mkdir -p viper-cli/target/viper-lib;"
                        + " touch viper-cli/target/viper-lib/viper-core.jar viper-cli/target/viper-cli.jar");
        // A training run writes its cache (unless told to fail); a command logs whether it ran with a cache.
        script(jdk.resolve("java"), """
                for a in "$@"; do case "$a" in
                  -XX:AOTCacheOutput=*) [ -n "${FAIL_TRAINING:-}" ] && exit 1
                    echo cache > "${a#-XX:AOTCacheOutput=}"; echo trained >> "%1$s/trainings"; exit 0;;
                esac; done
                cache=none
                for a in "$@"; do case "$a" in -XX:AOTCache=*) cache="${a#-XX:AOTCache=}";; esac; done
                echo "ran $cache" >> "%1$s/runs"
                """.formatted(root));
    }

    @Test
    void threeCommandsAtOnceOnAStaleBuildBuildAndTrainOnceAndAllRunWithTheCache() throws Exception {
        List<Process> commands = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            commands.add(start(Map.of(), i));
        }
        for (int i = 0; i < commands.size(); i++) {
            awaitSuccess(commands.get(i), i);
        }
        assertEquals(List.of("build"), lines("builds"), "one build");
        assertEquals(List.of("trained"), lines("trainings"), "one training");
        assertEquals(List.of(ran(true), ran(true), ran(true)), lines("runs"), "every command ran, with the cache");
    }

    @Test
    void aJarRebuiltSinceTheTrainingLeavesTheCacheUnused() throws Exception {
        awaitSuccess(start(Map.of(), 0), 0);
        // ./mvnw package run by hand: newer jars, the wrapper's own build stamp untouched
        Files.setLastModifiedTime(
                lib.resolve("viper-core.jar"), FileTime.from(Instant.now().plusSeconds(60)));
        awaitSuccess(start(Map.of(), 1), 1);
        assertEquals(List.of(ran(true), ran(false)), lines("runs"));
        assertEquals(List.of("trained"), lines("trainings"), "not trained again before the next build");
    }

    @Test
    void withoutTheCacheNothingIsTrainedOrPassed() throws Exception {
        awaitSuccess(start(Map.of("VIPER_AOT", "0"), 0), 0);
        assertEquals(List.of(ran(false)), lines("runs"));
        assertTrue(!Files.exists(root.resolve("trainings")));
    }

    @Test
    void aFailedTrainingIsSaidOnceAndTheCommandsRunWithoutACache() throws Exception {
        awaitSuccess(start(Map.of("FAIL_TRAINING", "1"), 0), 0);
        String said = Files.readString(root.resolve("out0"));
        assertTrue(said.contains("viper: no AOT cache, its training failed (log: "), said);
        awaitSuccess(start(Map.of("FAIL_TRAINING", "1"), 1), 1);
        assertTrue(!Files.readString(root.resolve("out1")).contains("AOT"), "not tried again before the next build");
        assertEquals(List.of(ran(false), ran(false)), lines("runs"));
    }

    private String ran(boolean withCache) {
        return "ran " + (withCache ? lib.resolve("viper.aot").toString() : "none");
    }

    private Process start(Map<String, String> env, int i) throws IOException {
        ProcessBuilder pb = new ProcessBuilder("bash", root.resolve("viper").toString(), "--version")
                .redirectErrorStream(true)
                .redirectOutput(root.resolve("out" + i).toFile());
        pb.environment().remove("VIPER_AOT");
        pb.environment().putAll(env);
        return pb.start();
    }

    private void awaitSuccess(Process p, int i) throws Exception {
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "command " + i + " ended");
        assertEquals(0, p.exitValue(), Files.readString(root.resolve("out" + i)));
    }

    private List<String> lines(String file) throws IOException {
        return Files.readAllLines(root.resolve(file));
    }

    private static void script(Path file, String body) throws IOException {
        Files.writeString(file, "#!/usr/bin/env bash\n" + body + "\n");
        executable(file);
    }

    private static void executable(Path file) throws IOException {
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
}
