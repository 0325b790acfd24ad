package io.viper.cli.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.viper.ViperConfig;
import io.viper.cli.bench.FleetSettings.Topology;
import io.viper.demo.ChildJvm;
import io.viper.errors.ViperTimeoutException;
import io.viper.format.SafetensorsFile;
import io.viper.format.SafetensorsWriter;
import io.viper.tensor.Tensor;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalDouble;
import java.util.OptionalLong;

/**
 * The measurement behind {@code viper bench fleet}: a simulated cluster on this machine ({@link FleetNetwork}), the
 * embedded broker and a producer ({@code viper broker}, {@code viper publish --transports tcp://NODE0:0}) on node 0 and
 * a consumer ({@code viper consume --paths tcp}) on each of nodes 1 to N, every one a {@code viper} process of its own
 * ({@link ChildJvm}), all with a shared secret ({@code viper secret}; the consumers hold the consumer token). Per
 * consumer: its latency from the producer's {@code publish} call to its swap (the consumer's own {@code latency_ms}, by
 * the wall clock that every process of one machine shares), its bytes moved and reused and its path, and whether the
 * tensors it wrote ({@code --out}) are the published ones, byte for byte. Per round: the bytes node 0 sent on its link
 * (where it has one). One thread; not reusable.
 */
public final class FleetBench {
    /** The model's name. */
    static final String MODEL = "fleet";
    /** How long a process may take to start and say so. */
    static final Duration START_WAIT = Duration.ofMinutes(2);
    /** After every consumer connected to the broker, time for the subscriptions its handshake is followed by. */
    static final Duration SETTLE = Duration.ofMillis(500);
    /** The options of every child JVM: small heaps (the models live outside the heap), and 17 of them on 2 cores. */
    static final List<String> JVM_OPTIONS = List.of("-Xmx256m", "-XX:+UseSerialGC");

    /**
     * One consumer's update.
     *
     * @param node its node (1 to N)
     * @param latencyMs the producer's publish call to its swap
     * @param path the transport it read from
     * @param bytes bytes it moved
     * @param reused bytes it did not move (unchanged blocks of the version it held)
     * @param identical whether the tensors it swapped in are the published ones, byte for byte
     * @param fromProducer of {@code bytes}, those read from the producer
     * @param fromRelays of {@code bytes}, those read from relaying consumers
     */
    public record Swap(
            int node,
            long version,
            double latencyMs,
            String path,
            long bytes,
            long reused,
            boolean identical,
            long fromProducer,
            long fromRelays) {}

    /**
     * One version delivered to one fleet.
     *
     * @param changed the share of blocks asked to change (1: the first version, every byte new)
     * @param newBytes the bytes of the blocks that did change: what each consumer has to receive
     * @param producerTxBytes bytes node 0 sent on its link while the consumers took the version (broker included)
     * @param killed the node SIGKILLed mid-transfer (its swap is not among {@code swaps}), or 0
     */
    public record Round(
            Topology topology,
            int consumers,
            double changed,
            long newBytes,
            List<Swap> swaps,
            OptionalLong producerTxBytes,
            int killed) {
        /** The publish call to the last consumer's swap. */
        public double lastSwapMs() {
            return swaps.stream().mapToDouble(Swap::latencyMs).max().orElse(Double.NaN);
        }

        public boolean allIdentical() {
            return swaps.stream().allMatch(Swap::identical);
        }
    }

    /** Every round, and what they ran on. */
    public record Result(long sizeBytes, LinkRate rate, boolean capped, String network, List<Round> rounds) {
        /** The last swap of the round of the same topology and share changed with one consumer, if the run had one. */
        public OptionalDouble oneConsumerMs(Round r) {
            return rounds.stream()
                    .filter(o -> o.consumers() == 1 && o.topology() == r.topology() && o.changed() == r.changed())
                    .mapToDouble(Round::lastSwapMs)
                    .findFirst();
        }
    }

    private final FleetSettings settings;
    private final ObjectMapper json = new ObjectMapper();

    public FleetBench(FleetSettings settings) {
        this.settings = settings;
    }

    /**
     * Makes the network, the secret and the model files, then runs every topology over every fleet size; removes the
     * network after.
     */
    public Result run() throws Exception {
        Path dir = Files.createDirectories(settings.dir());
        try (FleetNetwork net = FleetNetwork.open(settings.largest(), settings.rate(), settings.progress())) {
            Path secret = dir.resolve("secret");
            Path token = dir.resolve("consumer.token");
            viper(dir, "secret", "--out", secret.toString());
            viper(dir, "secret", "--consumer", "--from", secret.toString(), "--out", token.toString());
            List<Version> versions = models(dir);
            Path warmup = warmupModel(dir);
            List<Round> rounds = new ArrayList<>();
            for (Topology t : settings.topologies()) {
                for (int n : settings.consumers()) {
                    settings.progress()
                            .accept("measuring " + t.label() + " with " + n + " consumer" + (n == 1 ? "" : "s")
                                    + "...");
                    rounds.addAll(fleet(net, t, n, versions, warmup, secret, token));
                }
            }
            return new Result(settings.sizeBytes(), settings.rate(), net.capped(), net.description(), rounds);
        }
    }

    /**
     * A model file, the share of blocks it changed from the one before, the bytes of those blocks, and the hash of its
     * tensors.
     */
    private record Version(Path file, double changed, long newBytes, String hash) {}

    /**
     * The unmeasured version every fleet takes first, so that what is measured is a fleet of running servers, not of
     * processes whose first work this is (each JVM compiling the receive, hash and relay paths at the same moment, on 2
     * cores): the model's layout at a quarter of its size, at most 32 MiB, with bytes no measured version has.
     */
    private Path warmupModel(Path dir) throws IOException {
        long bytes = Math.max(1L << 20, Math.min(32L << 20, settings.sizeBytes() / 4));
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment model = arena.allocate(bytes, 4096);
            ModelTensors.fill(model);
            for (long i = 0; i + 8 <= bytes; i += 8) {
                model.set(ValueLayout.JAVA_LONG_UNALIGNED, i, ~model.get(ValueLayout.JAVA_LONG_UNALIGNED, i));
            }
            Path file = dir.resolve("warmup.safetensors");
            SafetensorsWriter.write(file, ModelTensors.tensors(model), Map.of());
            return file;
        }
    }

    /** The first version (random bytes), and with {@code --changed} a second where that share of blocks changed. */
    private List<Version> models(Path dir) throws IOException {
        List<Version> out = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment model = arena.allocate(settings.sizeBytes(), 4096);
            ModelTensors.fill(model);
            out.add(write(dir.resolve("v1.safetensors"), model, 1, settings.sizeBytes()));
            if (settings.changed().isPresent()) {
                double share = settings.changed().getAsDouble();
                MemorySegment before =
                        arena.allocate(settings.sizeBytes(), 4096).copyFrom(model);
                long block = ViperConfig.of(Map.of()).get(ViperConfig.BLOCK_BYTES);
                new ModelChanges(block).change(model, share);
                out.add(write(
                        dir.resolve("v2.safetensors"),
                        model,
                        share,
                        newBytes(ModelTensors.tensors(before), ModelTensors.tensors(model), block)));
            }
        }
        return out;
    }

    private static Version write(Path file, MemorySegment model, double changed, long newBytes) throws IOException {
        SafetensorsWriter.write(file, ModelTensors.tensors(model), Map.of());
        return new Version(file, changed, newBytes, hash(file));
    }

    /**
     * The bytes of the blocks (each tensor cut into {@code block} bytes from its start, as the producer cuts it) that
     * differ.
     */
    static long newBytes(List<Tensor> before, List<Tensor> after, long block) {
        long n = 0;
        for (int i = 0; i < after.size(); i++) {
            MemorySegment a = before.get(i).data();
            MemorySegment b = after.get(i).data();
            for (long off = 0; off < b.byteSize(); off += block) {
                long len = Math.min(block, b.byteSize() - off);
                if (a.asSlice(off, len).mismatch(b.asSlice(off, len)) >= 0) {
                    n += len;
                }
            }
        }
        return n;
    }

    /** SHA-256 over every tensor's name and bytes, in the file's order. */
    static String hash(Path file) throws IOException {
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            MessageDigest d = MessageDigest.getInstance("SHA-256");
            for (Tensor t : f.tensors()) {
                d.update((t.name() + "\0" + t.info().dtype() + "\0").getBytes(StandardCharsets.UTF_8));
                d.update(t.data().asByteBuffer());
            }
            return HexFormat.of().formatHex(d.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** One fleet of {@code n} consumers: broker, consumers, then each version published by a producer of its own. */
    private List<Round> fleet(
            FleetNetwork net, Topology t, int n, List<Version> versions, Path warmup, Path secret, Path token)
            throws Exception {
        Path dir = Files.createDirectories(settings.dir().resolve(t.label() + "-" + n));
        List<ChildJvm> children = new ArrayList<>();
        try {
            ChildJvm broker = start(
                    children,
                    net,
                    0,
                    "broker",
                    dir,
                    "broker",
                    "--host",
                    net.host(0),
                    "--port",
                    "0",
                    "--set",
                    auth(secret));
            String prefix = "viper broker listening on ";
            String uri = broker.awaitLine(prefix, START_WAIT)
                    .substring(prefix.length())
                    .strip();
            List<ChildJvm> consumers = new ArrayList<>();
            for (int i = 1; i <= n; i++) {
                consumers.add(start(
                        children,
                        net,
                        i,
                        "consumer " + i,
                        dir,
                        consumerArgs(t, uri, dir.resolve("out-" + i), false, token, net.host(i))));
            }
            awaitSubscribed(net, URI.create(uri).getPort(), consumers);
            List<Round> rounds = new ArrayList<>();
            Duration wait =
                    START_WAIT.plusMillis(Math.round(4 * n * settings.rate().ms(settings.sizeBytes())));
            ChildJvm warming = startProducer(children, net, dir, "producer warm-up", warmup, uri, secret);
            warming.awaitLine("{", START_WAIT);
            for (ChildJvm c : consumers) {
                c.awaitLine("{", wait);
            }
            int dead = 0;
            for (Version v : versions) {
                OptionalLong before = net.txBytes(0);
                ChildJvm producer =
                        startProducer(children, net, dir, "producer v" + (rounds.size() + 1), v.file(), uri, secret);
                producer.awaitLine("{", START_WAIT);
                // One relay of a chain killed half a model's link time after the publish: mid-transfer.
                int killed = settings.killRelay() && t == Topology.RELAY && n > 2 && dead == 0 ? n / 2 : 0;
                dead = Math.max(dead, killed);
                Thread killer = null;
                if (killed > 0) {
                    ChildJvm victim = consumers.get(killed - 1);
                    long delayMs = Math.round(settings.rate().ms(settings.sizeBytes()) / 2);
                    killer = Thread.ofPlatform().start(() -> {
                        try {
                            Thread.sleep(delayMs);
                            victim.kill();
                            settings.progress().accept("killed the relay on node " + killed + " (SIGKILL)");
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    });
                }
                List<Swap> swaps = new ArrayList<>();
                for (int i = 1; i <= n; i++) {
                    if (i == dead) {
                        continue;
                    }
                    JsonNode line = json.readTree(consumers.get(i - 1).awaitLine("{", wait));
                    swaps.add(new Swap(
                            i,
                            line.get("version").asLong(),
                            line.get("latency_ms").asDouble(),
                            line.get("path").asText(),
                            line.get("bytes").asLong(),
                            line.get("reused_bytes").asLong(),
                            false,
                            line.path("bytes_from_producer").asLong(),
                            line.path("bytes_from_relays").asLong()));
                }
                if (killer != null) {
                    killer.join();
                }
                OptionalLong after = net.txBytes(0);
                OptionalLong sent = before.isPresent() && after.isPresent()
                        ? OptionalLong.of(after.getAsLong() - before.getAsLong())
                        : OptionalLong.empty();
                rounds.add(new Round(t, n, v.changed(), v.newBytes(), checked(swaps, dir, v), sent, dead));
            }
            return rounds;
        } finally {
            for (ChildJvm c : children.reversed()) {
                c.close();
            }
        }
    }

    /** Starts {@code viper publish} of {@code file} on node 0; it stays until the fleet ends. */
    private static ChildJvm startProducer(
            List<ChildJvm> children, FleetNetwork net, Path dir, String name, Path file, String notifier, Path secret)
            throws IOException {
        return start(
                children,
                net,
                0,
                name,
                dir,
                "publish",
                "--model",
                MODEL,
                "--file",
                file.toString(),
                "--notifier",
                notifier,
                "--transports",
                "tcp://" + net.host(0) + ":0",
                "--linger",
                "1h",
                "--set",
                "viper.producer.block.skip.unshared=false",
                "--set",
                auth(secret));
    }

    /**
     * What a consumer of topology {@code t} runs: {@code viper consume} over tcp with the consumer token, writing each
     * version it swaps in to {@code out}; {@code once}: it exits after the first. A relay serves on {@code host} and
     * stays until the bench ends, since others may still read from it.
     */
    private static List<String> consumerArgs(
            Topology t, String notifier, Path out, boolean once, Path token, String host) {
        List<String> args = new ArrayList<>(List.of(
                "consume",
                "--model",
                MODEL,
                "--notifier",
                notifier,
                "--paths",
                "tcp",
                "--out",
                out.toString(),
                "--set",
                auth(token)));
        return switch (t) {
            case STAR -> {
                if (once) {
                    args.add("--once");
                }
                yield args;
            }
            case RELAY -> {
                args.add("--relay");
                args.add("tcp://" + host + ":0");
                yield args;
            }
        };
    }

    /**
     * {@code swaps} with whether each consumer's copy (its {@code --out} file, removed here) has the tensors of
     * {@code v}.
     */
    private static List<Swap> checked(List<Swap> swaps, Path dir, Version v) throws IOException {
        List<Swap> out = new ArrayList<>();
        for (Swap s : swaps) {
            Path copy = dir.resolve("out-" + s.node()).resolve(MODEL + "-v" + s.version() + ".safetensors");
            boolean same = Files.exists(copy) && hash(copy).equals(v.hash());
            Files.deleteIfExists(copy);
            out.add(new Swap(
                    s.node(),
                    s.version(),
                    s.latencyMs(),
                    s.path(),
                    s.bytes(),
                    s.reused(),
                    same,
                    s.fromProducer(),
                    s.fromRelays()));
        }
        return out;
    }

    /** Waits until the broker on node 0 has a connection from every consumer, then for their subscriptions. */
    private static void awaitSubscribed(FleetNetwork net, int port, List<ChildJvm> consumers)
            throws InterruptedException {
        long deadline = System.nanoTime() + START_WAIT.toNanos();
        while (net.connections(0, port) < consumers.size()) {
            for (ChildJvm c : consumers) {
                if (!c.isAlive()) {
                    throw c.exited("before connecting to the broker");
                }
            }
            if (System.nanoTime() > deadline) {
                throw new ViperTimeoutException(
                        "the consumers did not all connect to the broker within " + START_WAIT.toSeconds() + " s");
            }
            Thread.sleep(100);
        }
        Thread.sleep(SETTLE.toMillis());
    }

    private static String auth(Path secretFile) {
        return "viper.auth.secret.file=" + secretFile;
    }

    /** Starts {@code viper ARGS} on node {@code node}, its stderr in {@code dir}; {@code children} closes it. */
    private static ChildJvm start(
            List<ChildJvm> children, FleetNetwork net, int node, String name, Path dir, List<String> args)
            throws IOException {
        List<String> cmd = net.command(node, ChildJvm.command(JVM_OPTIONS, "io.viper.cli.ViperMain", args));
        ChildJvm c = ChildJvm.start(name, cmd, Optional.of(dir.resolve(name.replace(' ', '-') + ".log")));
        children.add(c);
        return c;
    }

    private static ChildJvm start(
            List<ChildJvm> children, FleetNetwork net, int node, String name, Path dir, String... args)
            throws IOException {
        return start(children, net, node, name, dir, List.of(args));
    }

    /** Runs {@code viper ARGS} here to its end ({@code viper secret}): it prints one line starting {@code wrote}. */
    private static void viper(Path dir, String... args) throws Exception {
        try (ChildJvm c = ChildJvm.start(
                "viper " + args[0],
                ChildJvm.command(JVM_OPTIONS, "io.viper.cli.ViperMain", List.of(args)),
                Optional.of(dir.resolve("viper-" + args[0] + ".log")))) {
            c.awaitLine("wrote", START_WAIT);
        }
    }
}
