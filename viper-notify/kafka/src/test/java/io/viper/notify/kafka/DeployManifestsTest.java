package io.viper.notify.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.viper.notify.kafka.internal.KafkaUri;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Parses the deployment files under {@code deploy/} and checks that they hang together: every Kubernetes object is
 * well-formed, selectors match their pod labels, referenced Services, claims and ConfigMaps exist, the consumer is
 * ready only once it holds a model, notifier URIs are valid {@code kafka://} URIs naming a defined service, and the
 * compose and Prometheus files agree on the metrics ports.
 */
class DeployManifestsTest {
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
    private static Path deploy;
    private static List<JsonNode> k8s;

    @BeforeAll
    static void load() throws IOException {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null && !Files.isDirectory(dir.resolve("deploy/k8s"))) {
            dir = dir.getParent();
        }
        assertNotNull(dir, "no deploy/k8s above " + Path.of("").toAbsolutePath());
        deploy = dir.resolve("deploy");
        k8s = new ArrayList<>();
        try (Stream<Path> files = Files.walk(deploy.resolve("k8s"))) {
            for (Path f :
                    files.filter(p -> p.toString().endsWith(".yaml")).sorted().toList()) {
                for (JsonNode doc : readAll(f)) {
                    ((com.fasterxml.jackson.databind.node.ObjectNode) doc)
                            .put("__file", deploy.relativize(f).toString());
                    k8s.add(doc);
                }
            }
        }
    }

    private static List<JsonNode> readAll(Path f) throws IOException {
        List<JsonNode> docs = new ArrayList<>();
        try (MappingIterator<JsonNode> it = YAML.readerFor(JsonNode.class).readValues(f.toFile())) {
            while (it.hasNext()) {
                JsonNode n = it.next();
                if (n != null && !n.isNull() && !n.isEmpty()) {
                    docs.add(n);
                }
            }
        }
        return docs;
    }

    private static List<JsonNode> kind(String kind) {
        return k8s.stream().filter(d -> d.path("kind").asText().equals(kind)).toList();
    }

    private static JsonNode one(String kind, String name) {
        return kind(kind).stream()
                .filter(d -> d.path("metadata").path("name").asText().equals(name))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no " + kind + " named " + name + " in deploy/k8s"));
    }

    @Test
    void everyKubernetesObjectIsWellFormed() {
        assertTrue(k8s.size() >= 10, "objects found: " + k8s.size());
        for (JsonNode d : k8s) {
            String where = d.path("__file").asText() + " " + d.path("kind").asText();
            assertTrue(d.path("apiVersion").isTextual() && d.path("kind").isTextual(), where + ": apiVersion and kind");
            if (d.path("kind").asText().equals("Kustomization")) {
                continue;
            }
            assertTrue(
                    d.path("metadata").path("name").asText().matches("[a-z0-9]([-a-z0-9.]*[a-z0-9])?"),
                    where + ": metadata.name");
            if (!d.path("kind").asText().equals("Namespace")) {
                assertEquals("viper", d.path("metadata").path("namespace").asText(), where + ": namespace");
            }
        }
    }

    @Test
    void kustomizationListsExistingFiles() {
        JsonNode kz = kind("Kustomization").getFirst();
        Set<String> listed = new HashSet<>();
        for (JsonNode r : kz.path("resources")) {
            assertTrue(
                    Files.isRegularFile(deploy.resolve("k8s").resolve(r.asText())),
                    "kustomization resource " + r.asText() + " exists");
            listed.add(r.asText());
        }
        assertTrue(
                listed.containsAll(List.of("kafka.yaml", "producer-job.yaml", "consumer-deployment.yaml")),
                listed.toString());
    }

    @Test
    void workloadSelectorsMatchTheirPodLabelsAndReferencesResolve() {
        Set<String> claims = new HashSet<>();
        kind("PersistentVolumeClaim")
                .forEach(c -> claims.add(c.path("metadata").path("name").asText()));
        Set<String> configMaps = new HashSet<>();
        kind("ConfigMap")
                .forEach(c -> configMaps.add(c.path("metadata").path("name").asText()));
        int workloads = 0;
        for (String kind : List.of("StatefulSet", "Deployment", "Job")) {
            for (JsonNode w : kind(kind)) {
                workloads++;
                JsonNode template = w.path("spec").path("template");
                JsonNode labels = template.path("metadata").path("labels");
                if (!kind.equals("Job")) {
                    Iterator<Map.Entry<String, JsonNode>> sel = w.path("spec")
                            .path("selector")
                            .path("matchLabels")
                            .properties()
                            .iterator();
                    assertTrue(sel.hasNext(), kind + " has a selector");
                    sel.forEachRemaining(e -> assertEquals(
                            e.getValue().asText(),
                            labels.path(e.getKey()).asText(),
                            kind + " selector " + e.getKey() + " matches the pod template"));
                }
                for (JsonNode v : template.path("spec").path("volumes")) {
                    if (v.has("persistentVolumeClaim")) {
                        assertTrue(
                                claims.contains(v.path("persistentVolumeClaim")
                                        .path("claimName")
                                        .asText()),
                                "claim of " + kind);
                    }
                    if (v.has("configMap")) {
                        assertTrue(
                                configMaps.contains(
                                        v.path("configMap").path("name").asText()),
                                "configMap of " + kind);
                    }
                }
                for (JsonNode c : template.path("spec").path("containers")) {
                    assertFalse(c.path("image").asText().isEmpty(), kind + " container image");
                    Set<String> volumes = new HashSet<>();
                    template.path("spec")
                            .path("volumes")
                            .forEach(v -> volumes.add(v.path("name").asText()));
                    w.path("spec")
                            .path("volumeClaimTemplates")
                            .forEach(v ->
                                    volumes.add(v.path("metadata").path("name").asText()));
                    for (JsonNode m : c.path("volumeMounts")) {
                        assertTrue(volumes.contains(m.path("name").asText()), kind + " mounts a defined volume: " + m);
                    }
                }
            }
        }
        assertEquals(3, workloads, "StatefulSet (Kafka), Deployment (consumer), Job (producer)");
    }

    @Test
    void kafkaStatefulSetIsAThreeNodeKraftQuorumBehindItsHeadlessService() {
        JsonNode sts = one("StatefulSet", "kafka");
        int replicas = sts.path("spec").path("replicas").asInt();
        assertEquals(3, replicas);
        JsonNode svc = one("Service", sts.path("spec").path("serviceName").asText());
        assertEquals("None", svc.path("spec").path("clusterIP").asText(), "the StatefulSet's service is headless");
        Map<String, String> env = new HashMap<>();
        sts.path("spec")
                .path("template")
                .path("spec")
                .path("containers")
                .get(0)
                .path("env")
                .forEach(e -> env.put(e.path("name").asText(), e.path("value").asText()));
        String[] voters = env.get("KAFKA_CONTROLLER_QUORUM_VOTERS").split(",");
        assertEquals(replicas, voters.length, "one voter per pod");
        for (int i = 0; i < replicas; i++) {
            assertTrue(
                    voters[i].startsWith(i + "@kafka-" + i + "."
                            + svc.path("metadata").path("name").asText() + "."),
                    voters[i]);
        }
        assertEquals(22, env.get("CLUSTER_ID").length(), "a base64 cluster id");
        assertEquals(
                "false", env.get("KAFKA_AUTO_CREATE_TOPICS_ENABLE"), "the Viper producer creates the compacted topic");
    }

    @Test
    void producerAndConsumerUseAValidKafkaUriOfADefinedService() {
        Set<String> services = new HashSet<>();
        kind("Service")
                .forEach(s -> services.add(s.path("metadata").path("name").asText()));
        for (JsonNode w : List.of(one("Job", "viper-producer"), one("Deployment", "viper-consumer"))) {
            JsonNode args = w.path("spec")
                    .path("template")
                    .path("spec")
                    .path("containers")
                    .get(0)
                    .path("args");
            String notifier = flag(args, "--notifier");
            KafkaUri uri = KafkaUri.parse(URI.create(notifier));
            String host = uri.brokers().getFirst().split(":")[0];
            assertTrue(services.contains(host.split("\\.")[0]), "notifier host " + host + " is a defined Service");
            assertEquals("viper.models", uri.topic());
        }
        assertEquals(
                "publish",
                one("Job", "viper-producer")
                        .path("spec")
                        .path("template")
                        .path("spec")
                        .path("containers")
                        .get(0)
                        .path("args")
                        .get(0)
                        .asText());
        assertTrue(List.of("OnFailure", "Never")
                .contains(one("Job", "viper-producer")
                        .path("spec")
                        .path("template")
                        .path("spec")
                        .path("restartPolicy")
                        .asText()));
    }

    @Test
    void consumerIsReadyOnlyOnceItHoldsAModel() {
        JsonNode c = one("Deployment", "viper-consumer")
                .path("spec")
                .path("template")
                .path("spec")
                .path("containers")
                .get(0);
        String out = flag(c.path("args"), "--out");
        JsonNode probe = c.path("readinessProbe");
        assertTrue(probe.has("exec"), "an exec readiness probe");
        String command = String.join(" ", YAML.convertValue(probe.path("exec").path("command"), String[].class));
        assertTrue(
                command.contains(out + "/") && command.contains(".safetensors"),
                "the probe checks for a model in " + out + ": " + command);
        boolean mounted = false;
        for (JsonNode m : c.path("volumeMounts")) {
            mounted |= m.path("mountPath").asText().equals(out)
                    && !m.path("readOnly").asBoolean(false);
        }
        assertTrue(mounted, out + " is a writable mount");
    }

    @Test
    void strimziVariantIsAKraftClusterWithANodePool() {
        JsonNode kafka = one("Kafka", "viper-kafka");
        assertEquals("kafka.strimzi.io/v1beta2", kafka.path("apiVersion").asText());
        assertEquals(
                "enabled",
                kafka.path("metadata")
                        .path("annotations")
                        .path("strimzi.io/kraft")
                        .asText());
        JsonNode pool = one("KafkaNodePool", "dual-role");
        assertEquals(
                "viper-kafka",
                pool.path("metadata").path("labels").path("strimzi.io/cluster").asText());
        assertEquals(3, pool.path("spec").path("replicas").asInt());
    }

    @Test
    void composeRunsKafkaAProducerAndAConsumerThatAgreeOnTheNotifier() throws IOException {
        JsonNode compose = readAll(deploy.resolve("compose/compose.yaml")).getFirst();
        JsonNode services = compose.path("services");
        for (String s : List.of("kafka", "producer", "consumer")) {
            assertTrue(services.has(s), "service " + s);
        }
        Set<String> volumes = new HashSet<>();
        compose.path("volumes").fieldNames().forEachRemaining(volumes::add);
        String notifier = null;
        for (String s : List.of("producer", "consumer")) {
            JsonNode svc = services.path(s);
            assertTrue(svc.path("depends_on").has("kafka"), s + " waits for kafka");
            String n = flag(svc.path("command"), "--notifier");
            KafkaUri uri = KafkaUri.parse(URI.create(n));
            assertTrue(services.has(uri.brokers().getFirst().split(":")[0]), s + " notifier names a compose service");
            if (notifier != null) {
                assertEquals(notifier, n, "producer and consumer use the same notifier");
            }
            notifier = n;
            for (JsonNode v : svc.path("volumes")) {
                String src = v.asText().split(":")[0];
                assertTrue(src.startsWith(".") || volumes.contains(src), s + " volume " + src + " is declared");
            }
        }
        assertTrue(
                Files.isRegularFile(deploy.resolve("compose")
                        .resolve(services.path("producer")
                                .path("build")
                                .path("context")
                                .asText())
                        .resolve(services.path("producer")
                                .path("build")
                                .path("dockerfile")
                                .asText())),
                "the producer's Dockerfile exists");
    }

    @Test
    void prometheusScrapesTheMetricsPortsTheDeploymentsUse() throws IOException {
        JsonNode prom = readAll(deploy.resolve("prometheus/prometheus.yml")).getFirst();
        Set<String> jobs = new HashSet<>();
        Set<String> targets = new HashSet<>();
        for (JsonNode job : prom.path("scrape_configs")) {
            assertTrue(jobs.add(job.path("job_name").asText()), "job names are unique");
            for (JsonNode sc : job.path("static_configs")) {
                sc.path("targets").forEach(t -> targets.add(t.asText()));
            }
        }
        assertTrue(jobs.containsAll(List.of("viper", "viper-slurm", "viper-kubernetes")), jobs.toString());
        JsonNode services =
                readAll(deploy.resolve("compose/compose.yaml")).getFirst().path("services");
        for (String s : List.of("producer", "consumer")) {
            String port = flag(services.path(s).path("command"), "--metrics-port");
            assertTrue(targets.contains("127.0.0.1:" + port), "prometheus scrapes the compose " + s + " on " + port);
        }
        for (JsonNode w : List.of(one("Job", "viper-producer"), one("Deployment", "viper-consumer"))) {
            JsonNode t = w.path("spec").path("template");
            assertEquals(
                    flag(t.path("spec").path("containers").get(0).path("args"), "--metrics-port"),
                    t.path("metadata")
                            .path("annotations")
                            .path("prometheus.io/port")
                            .asText(),
                    "scrape annotation matches --metrics-port");
        }
    }

    private static String flag(JsonNode args, String name) {
        for (JsonNode a : args) {
            if (a.asText().startsWith(name + "=")) {
                return a.asText().substring(name.length() + 1);
            }
        }
        fail("no " + name + "=... in " + args);
        return null;
    }
}
