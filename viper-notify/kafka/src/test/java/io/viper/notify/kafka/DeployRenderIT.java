package io.viper.notify.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Kubernetes and compose recipes rendered by their own tools, where those are installed (skipped with the reason
 * otherwise): {@code kubectl kustomize deploy/k8s} and {@code docker compose config}, each on a copy of the recipe with
 * secret files made as its comments say; then the secret wiring and metrics binding of {@link DeploySecretsTest} on
 * what the tool produced.
 */
class DeployRenderIT {
    @TempDir
    Path tmp;

    private record Result(int code, String out) {}

    private static Result run(Path dir, String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).start();
        byte[] out = p.getInputStream().readAllBytes();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), String.join(" ", cmd) + " finished");
        return new Result(p.exitValue(), p.exitValue() == 0 ? new String(out, StandardCharsets.UTF_8) : err);
    }

    private static boolean works(String... cmd) {
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    /** Copies {@code deploy/<recipe>} into {@code tmp} and writes its two secret files, mode 600. */
    private Path copyWithSecrets(String recipe) throws IOException {
        Path from = DeploySecretsTest.deploy().resolve(recipe);
        Path to = tmp.resolve(recipe);
        try (Stream<Path> files = Files.walk(from)) {
            for (Path f : files.toList()) {
                Files.copy(f, to.resolve(from.relativize(f).toString()), StandardCopyOption.COPY_ATTRIBUTES);
            }
        }
        for (String name : List.of("secret", "consumer.token")) {
            Path f = to.resolve("secrets").resolve(name);
            Files.writeString(f, name.equals("secret") ? "a".repeat(64) : "viper-consumer-token-for-rendering");
            Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
        }
        return to;
    }

    @Test
    void kustomizeRendersASecretMountedInTheProducerAndTheConsumers() throws Exception {
        Assumptions.assumeTrue(works("kubectl", "version", "--client"), "kubectl is not installed");
        Path k8s = copyWithSecrets("k8s");
        Result r = run(k8s, "kubectl", "kustomize", ".");
        assertEquals(0, r.code(), r.out());
        List<JsonNode> docs = DeploySecretsTest.readAll(new StringReader(r.out()));
        DeploySecretsTest.assertKubernetesSecretWiring(docs, true);
    }

    @Test
    void composeConfigHandsTheSecretsToProducerAndConsumer() throws Exception {
        Assumptions.assumeTrue(works("docker", "compose", "version"), "docker compose is not installed");
        Path compose = copyWithSecrets("compose");
        Result r = run(compose, "docker", "compose", "-f", "compose.yaml", "config");
        assertEquals(0, r.code(), r.out());
        DeploySecretsTest.assertComposeSecretWiring(
                DeploySecretsTest.readAll(new StringReader(r.out())).getFirst());
    }
}
