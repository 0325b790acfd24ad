package io.viper.notify.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The deploy/ recipes start as written (issue 38, item 2): each provisions Viper's shared secret the way its platform
 * does (compose secrets, a Kubernetes Secret, a mode-600 file in the Slurm job's directory) and passes the secret to
 * the producer and the consumer token to the consumers, since a producer serving beyond loopback refuses to start
 * without one; and each binds its metrics endpoint beyond loopback, where the shipped Prometheus configuration scrapes
 * it. The Kubernetes checks also run on {@code kubectl kustomize}'s output ({@code DeployRenderIT}).
 */
class DeploySecretsTest {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    static final String SECRET_KEY = "viper.auth.secret.file";

    static Path deploy() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("deploy/k8s"))) {
            dir = dir.getParent();
        }
        assertNotNull(dir, "no deploy/k8s above " + Path.of("").toAbsolutePath());
        return dir.resolve("deploy");
    }

    static List<JsonNode> readAll(Reader r) throws IOException {
        List<JsonNode> docs = new ArrayList<>();
        try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(r)) {
            while (it.hasNext()) {
                JsonNode n = it.next();
                if (n != null && !n.isNull() && !n.isEmpty()) {
                    docs.add(n);
                }
            }
        }
        return docs;
    }

    private static List<JsonNode> k8sSources() throws IOException {
        List<JsonNode> docs = new ArrayList<>();
        try (Stream<Path> files = Files.list(deploy().resolve("k8s"))) {
            for (Path f :
                    files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
                try (Reader r = Files.newBufferedReader(f)) {
                    docs.addAll(readAll(r));
                }
            }
        }
        return docs;
    }

    /** The value of {@code --name=VALUE} in {@code args}, if there. */
    static Optional<String> flag(JsonNode args, String name) {
        for (JsonNode a : args) {
            if (a.asText().startsWith(name + "=")) {
                return Optional.of(a.asText().substring(name.length() + 1));
            }
        }
        return Optional.empty();
    }

    static String secretFile(JsonNode args, String where) {
        for (JsonNode a : args) {
            if (a.asText().startsWith("--set=" + SECRET_KEY + "=")) {
                return a.asText().substring(("--set=" + SECRET_KEY + "=").length());
            }
        }
        throw new AssertionError(where + " sets no " + SECRET_KEY + ": " + args);
    }

    static void assertMetricsBeyondLoopback(JsonNode args, String where) {
        assertTrue(flag(args, "--metrics-port").isPresent(), where + " serves metrics");
        assertEquals(Optional.of("0.0.0.0"), flag(args, "--metrics-host"), where + ": metrics beyond loopback");
    }

    /**
     * Checks the Kubernetes objects {@code docs} (the sources, with a secretGenerator, or kustomize's output, with the
     * Secret it generated): the producer mounts key {@code secret}, the consumers key {@code consumer.token}, each
     * owner-only, and each names the mounted file in {@value #SECRET_KEY}.
     */
    static void assertKubernetesSecretWiring(List<JsonNode> docs, boolean rendered) {
        String secretName = null;
        for (JsonNode d : docs) {
            if (rendered && d.path("kind").asText().equals("Secret")) {
                secretName = d.path("metadata").path("name").asText();
                assertTrue(d.path("data").has("secret") && d.path("data").has("consumer.token"), d.toString());
            }
            if (!rendered && d.path("kind").asText().equals("Kustomization")) {
                for (JsonNode g : d.path("secretGenerator")) {
                    secretName = g.path("name").asText();
                    List<String> files = new ArrayList<>();
                    g.path("files").forEach(f -> files.add(f.asText()));
                    assertEquals(List.of("secret=secrets/secret", "consumer.token=secrets/consumer.token"), files);
                }
            }
        }
        assertNotNull(secretName, "a Secret for Viper's shared secret");
        Map<String, String> keyOf = Map.of("Job", "secret", "Deployment", "consumer.token");
        int workloads = 0;
        for (JsonNode d : docs) {
            String key = keyOf.get(d.path("kind").asText());
            if (key == null || !d.path("metadata").path("name").asText().startsWith("viper-")) {
                continue;
            }
            workloads++;
            String where = d.path("kind").asText() + " "
                    + d.path("metadata").path("name").asText();
            JsonNode pod = d.path("spec").path("template").path("spec");
            assertFalse(
                    pod.path("securityContext").has("fsGroup"), where + ": an fsGroup makes the file group-readable");
            JsonNode c = pod.path("containers").get(0);
            String file = secretFile(c.path("args"), where);
            assertMetricsBeyondLoopback(c.path("args"), where);
            boolean mounted = false;
            for (JsonNode m : c.path("volumeMounts")) {
                if (!file.startsWith(m.path("mountPath").asText() + "/")) {
                    continue;
                }
                String inside = file.substring(m.path("mountPath").asText().length() + 1);
                for (JsonNode v : pod.path("volumes")) {
                    JsonNode s = v.path("secret");
                    if (v.path("name").asText().equals(m.path("name").asText()) && !s.isMissingNode()) {
                        assertEquals(secretName, s.path("secretName").asText(), where);
                        assertEquals(0, s.path("defaultMode").asInt(0777) & 077, where + ": owner-only mode");
                        assertEquals(key, s.path("items").get(0).path("key").asText(), where + " gets " + key);
                        assertEquals(inside, s.path("items").get(0).path("path").asText(), where);
                        mounted = true;
                    }
                }
            }
            assertTrue(mounted, where + ": " + file + " is the Secret's key " + key);
        }
        assertEquals(2, workloads, "the producer Job and the consumer Deployment");
    }

    @Test
    void kubernetesMountsTheSecretInTheProducerAndTheTokenInTheConsumers() throws IOException {
        assertKubernetesSecretWiring(k8sSources(), false);
        assertGitIgnoresEverythingIn(deploy().resolve("k8s/secrets"));
    }

    /** compose's file secrets: the producer gets the secret, the consumer the token, both under /run/secrets. */
    static void assertComposeSecretWiring(JsonNode compose) {
        JsonNode services = compose.path("services");
        Map<String, String> fileOf = Map.of("producer", "secrets/secret", "consumer", "secrets/consumer.token");
        for (String s : List.of("producer", "consumer")) {
            JsonNode svc = services.path(s);
            JsonNode args = svc.path("command");
            String file = secretFile(args, s);
            assertMetricsBeyondLoopback(args, s);
            assertEquals(1, svc.path("secrets").size(), s + " gets one secret");
            JsonNode ref = svc.path("secrets").get(0);
            String name = ref.isTextual() ? ref.asText() : ref.path("source").asText();
            assertEquals("/run/secrets/" + name, file, s + " reads the secret compose mounts");
            String source = compose.path("secrets").path(name).path("file").asText();
            assertTrue(source.endsWith(fileOf.get(s)), s + ": " + name + " is " + source);
        }
    }

    @Test
    void composeHandsTheSecretToTheProducerAndTheTokenToTheConsumer() throws IOException {
        try (Reader r = Files.newBufferedReader(deploy().resolve("compose/compose.yaml"))) {
            assertComposeSecretWiring(readAll(r).getFirst());
        }
        assertGitIgnoresEverythingIn(deploy().resolve("compose/secrets"));
    }

    private static void assertGitIgnoresEverythingIn(Path dir) throws IOException {
        List<String> lines = Files.readAllLines(dir.resolve(".gitignore"));
        assertTrue(lines.contains("*") && lines.contains("!.gitignore"), dir + "/.gitignore keeps secrets out of git");
    }

    @Test
    void slurmSizesItselfMakesAnOwnerOnlySecretAndCleansUp() throws IOException {
        Path script = deploy().resolve("slurm/viper-kafka.sbatch");
        String text = Files.readString(script);
        for (String pinned : List.of("--nodes", "--cpus-per-task", "--time", "--mem", "--ntasks=")) {
            assertFalse(
                    Pattern.compile("(?m)^#SBATCH\\s+" + pinned).matcher(text).find(),
                    "#SBATCH " + pinned + " makes the job pend where the cluster cannot meet it");
        }
        assertTrue(text.contains("SLURM_CPUS_PER_TASK") && text.contains("SLURM_JOB_NODELIST"), "sized from the job");
        var model = Pattern.compile("MODEL_FILE=\\$\\{VIPER_MODEL_FILE:-\\$REPO/([^}]+)}")
                .matcher(text);
        assertTrue(model.find(), "a default model file");
        assertTrue(Files.isRegularFile(deploy().getParent().resolve(model.group(1))), model.group(1) + " exists");
        assertTrue(text.contains("secret --out \"$SECRET\"") && text.contains("secret --consumer"), "makes a secret");
        assertTrue(text.contains("trap cleanup EXIT"), "stops its steps and Kafka on any exit");
        for (String v :
                List.of("VIPER_NOTIFIER", "VIPER_PFS", "VIPER_MODEL", "VIPER_SECRET_FILE", "VIPER_AGENT_SOCKET")) {
            assertTrue(text.contains("export " + v) || text.contains(" " + v + "="), v + " for a custom producer");
        }
        assertEquals(
                text.split("--metrics-port", -1).length - 1,
                text.split("--metrics-host 0.0.0.0", -1).length - 1,
                "every metrics endpoint binds beyond loopback");
    }

    @Test
    void prometheusConfigurationSaysTheEndpointsMustBindBeyondLoopback() throws IOException {
        String prom = Files.readString(deploy().resolve("prometheus/prometheus.yml"));
        assertTrue(prom.contains("--metrics-host"), "the scrape config names the bind option");
    }
}
