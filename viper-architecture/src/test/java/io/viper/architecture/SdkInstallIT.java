package io.viper.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Java user's first contact with the SDK, as the README tells it: {@code scripts/install-sdk} puts the BOM and the
 * libraries (with sources and javadoc jars) into a local repository, and a fresh Maven project that holds nothing but
 * the README's {@code <dependency>} section and its Java quick start compiles and runs against them.
 *
 * <p>The repository is a private one under a temporary folder, never the user's {@code ~/.m2}: a stale {@code io.viper}
 * snapshot there would shadow the reactor's modules for whoever builds next. Third-party artifacts come from the
 * build's own local repository through a {@code file://} mirror, so nothing is downloaded.
 */
class SdkInstallIT {
    /** What the quick start needs: the BOM, the API, one transport and the embedded notifier (and their parents). */
    private static final String MODULES = "viper-bom,viper-core,viper-netty,viper-transfer/tcp,viper-notify/embedded";

    private static final long TIMEOUT_MINUTES = 8;

    @Test
    void aFreshProjectCompilesAndRunsTheReadmeSnippetAgainstTheInstalledSdk(@TempDir Path tmp) throws Exception {
        Path root = Repository.root();
        String readme = Files.readString(root.resolve("README.md"));
        String snippet = ReadmeSnippets.block(readme, "java", "class QuickStart");
        String dependencies = ReadmeSnippets.block(readme, "xml", "viper-bom");

        Path repo = tmp.resolve("repository");
        Path settings = tmp.resolve("settings.xml");
        Files.writeString(settings, mirrorSettings(Path.of(System.getProperty("viper.maven.localRepository"))));
        List<String> maven = List.of("-s", settings.toString(), "-Dmaven.repo.local=" + repo, "-B", "-ntp", "-q");

        List<String> install =
                new ArrayList<>(List.of(root.resolve("scripts/install-sdk").toString()));
        install.addAll(maven);
        install.addAll(List.of("-pl", MODULES, "-am"));
        run(install, root, tmp.resolve("install.log"));
        Path core = repo.resolve("io/viper/viper-core/0.1.0-SNAPSHOT");
        for (String jar : List.of(".jar", "-sources.jar", "-javadoc.jar")) {
            assertTrue(Files.isRegularFile(core.resolve("viper-core-0.1.0-SNAPSHOT" + jar)), "installed " + jar);
        }
        assertTrue(Files.isRegularFile(repo.resolve("io/viper/viper-bom/0.1.0-SNAPSHOT/viper-bom-0.1.0-SNAPSHOT.pom")));

        Path project = tmp.resolve("user-project");
        Path sources = Files.createDirectories(project.resolve("src/main/java"));
        Files.writeString(sources.resolve("QuickStart.java"), snippet);
        Files.writeString(project.resolve("pom.xml"), userPom(dependencies));
        List<String> build = new ArrayList<>(List.of(root.resolve("mvnw").toString(), "-f", project + "/pom.xml"));
        build.addAll(maven);
        build.addAll(List.of("package", "dependency:build-classpath", "-Dmdep.outputFile=" + project.resolve("cp")));
        run(build, root, tmp.resolve("build.log"));

        String classPath = project.resolve("target/classes") + ":"
                + Files.readString(project.resolve("cp")).strip();
        Path out = tmp.resolve("run.log");
        run(List.of(javaCommand(), "-cp", classPath, "QuickStart"), project, out);
        String printed = Files.readString(out);
        assertTrue(printed.contains("dense.bias[0] = "), "the snippet read the served tensor:\n" + printed);
    }

    /** Settings whose only repository is the build's local one, read as a remote ({@code file://}) repository. */
    private static String mirrorSettings(Path localRepository) {
        return """
                <settings>
                  <mirrors>
                    <mirror>
                      <id>build-local-repository</id>
                      <mirrorOf>*</mirrorOf>
                      <url>%s</url>
                    </mirror>
                  </mirrors>
                </settings>
                """.formatted(localRepository.toUri());
    }

    /** A project of the user's own: their coordinates, Java 25, the README's dependencies and pinned plugins. */
    private static String userPom(String dependencies) {
        return """
                <project xmlns="http://maven.apache.org/POM/4.0.0">
                  <modelVersion>4.0.0</modelVersion>
                  <groupId>com.example</groupId>
                  <artifactId>serving</artifactId>
                  <version>1.0</version>
                  <properties>
                    <maven.compiler.release>25</maven.compiler.release>
                    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
                  </properties>
                %s
                  <build>
                    <plugins>
                      <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.14.1</version></plugin>
                      <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
                      <plugin><artifactId>maven-surefire-plugin</artifactId><version>3.5.4</version></plugin>
                      <plugin><artifactId>maven-jar-plugin</artifactId><version>3.4.2</version></plugin>
                      <plugin><artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version></plugin>
                    </plugins>
                  </build>
                </project>
                """.formatted(dependencies);
    }

    private static String javaCommand() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** Runs {@code command} in {@code dir}, its output in {@code log}; fails with that output unless it exits 0. */
    private static void run(List<String> command, Path dir, Path log) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        boolean exited = p.waitFor(TIMEOUT_MINUTES, TimeUnit.MINUTES);
        if (!exited) {
            p.destroyForcibly().waitFor();
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertTrue(exited, String.join(" ", command) + " ran past " + TIMEOUT_MINUTES + " min:\n" + output);
        assertEquals(0, p.exitValue(), String.join(" ", command) + " failed:\n" + output);
    }
}
