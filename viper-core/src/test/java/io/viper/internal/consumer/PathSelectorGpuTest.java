package io.viper.internal.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.ViperConfig;
import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.spi.TransportClient;
import io.viper.spi.TransportProvider;
import io.viper.spi.TransportServer;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** The GPU tier in path selection: chosen only for a GPU consumer with room, skipped with a reason otherwise. */
class PathSelectorGpuTest {
    private static final long SIZE = 1000;

    private static TransportProvider provider(String scheme, Tier tier, int priority) {
        return new TransportProvider() {
            @Override
            public String scheme() {
                return scheme;
            }

            @Override
            public Tier tier() {
                return tier;
            }

            @Override
            public int priority() {
                return priority;
            }

            @Override
            public Optional<String> unavailableReason() {
                return Optional.empty();
            }

            @Override
            public TransportServer openServer(URI bind, ViperConfig config) {
                throw new AssertionError("path selection never opens a transport");
            }

            @Override
            public TransportClient openClient(ViperConfig config) {
                throw new AssertionError("path selection never opens a transport");
            }
        };
    }

    static final Map<String, TransportProvider> PROVIDERS = Map.of(
            "cuda-ipc", provider("cuda-ipc", Tier.GPU, 0),
            "cuda-pipe", provider("cuda-pipe", Tier.GPU, 10),
            "tcp", provider("tcp", Tier.HOST, 10),
            "file", provider("file", Tier.PFS, 0));

    /** Where the consumer's own PFS keeps m v1. */
    static final Location OWN_FILE = new Location(URI.create("file:///pfs/m/1/model.safetensors"), Tier.PFS);

    static Manifest manifest() {
        return new Manifest(
                "m",
                1,
                "p",
                0,
                new LinkedHashMap<>(),
                List.of(new TensorEntry(
                        new TensorInfo("w", DType.U8, new long[] {SIZE}, 0, SIZE), new ContentHash(1, 2))),
                List.of(
                        new Location(URI.create("tcp://h:1"), Tier.HOST),
                        new Location(URI.create("cuda-pipe://h:3"), Tier.GPU),
                        new Location(URI.create("cuda-ipc://h:2"), Tier.GPU),
                        new Location(URI.create("file:///pfs/m/1/model.safetensors"), Tier.PFS)));
    }

    private static PathSelector.Selection select(
            PathSelector.Capabilities caps, Function<String, Optional<String>> unavailable) {
        return PathSelector.select(
                manifest(), caps, s -> Optional.ofNullable(PROVIDERS.get(s)), unavailable, m -> Optional.of(OWN_FILE));
    }

    private static List<String> order(PathSelector.Selection s) {
        return s.usable().stream().map(c -> c.location().scheme()).toList();
    }

    @Test
    void gpuConsumerWithRoomPrefersCudaIpcThenPipeThenHostThenPfs() {
        PathSelector.Selection s =
                select(new PathSelector.Capabilities(true, SIZE, SIZE, List.of(), null), x -> Optional.empty());
        assertEquals(List.of("cuda-ipc", "cuda-pipe", "tcp", "file"), order(s));
        assertTrue(s.describe().startsWith("using cuda-ipc://h:2 (GPU tier"), s.describe());
    }

    @Test
    void hostConsumerSkipsGpuLocationsSayingWhy() {
        PathSelector.Selection s = select(
                new PathSelector.Capabilities(
                        false, 0, SIZE, List.of(), "consumer serves on host (viper.consumer.device=host)"),
                x -> Optional.empty());
        assertEquals(List.of("tcp", "file"), order(s));
        assertEquals(2, s.skipped().size());
        assertTrue(
                s.skipped().getFirst().contains("viper.consumer.device=host"),
                s.skipped().toString());
    }

    @Test
    void gpuConsumerWithoutDriverSkipsGpuWithTheDriverReason() {
        String why = "no CUDA driver/device: libcuda.so.1 not found";
        PathSelector.Selection s =
                select(new PathSelector.Capabilities(false, 0, SIZE, List.of(), why), x -> Optional.empty());
        assertEquals(List.of("tcp", "file"), order(s));
        assertTrue(
                s.skipped().stream().allMatch(r -> r.endsWith(why)), s.skipped().toString());
    }

    @Test
    void unavailableGpuTransportIsSkippedWithItsReason() {
        PathSelector.Selection s = select(
                new PathSelector.Capabilities(true, SIZE, SIZE, List.of(), null),
                x -> x.startsWith("cuda") ? Optional.of("no CUDA driver/device: cuInit failed") : Optional.empty());
        assertEquals(List.of("tcp", "file"), order(s));
        assertTrue(
                s.skipped().stream().allMatch(r -> r.contains("no CUDA driver/device: cuInit failed")),
                s.skipped().toString());
    }

    @Test
    void gpuWithoutRoomFallsToHostAndHostWithoutRoomToPfs() {
        PathSelector.Selection s =
                select(new PathSelector.Capabilities(true, SIZE - 1, SIZE, List.of(), null), x -> Optional.empty());
        assertEquals(List.of("tcp", "file"), order(s));
        assertTrue(
                s.skipped().getFirst().contains("exceed free GPU memory " + (SIZE - 1)),
                s.skipped().toString());
        PathSelector.Selection t =
                select(new PathSelector.Capabilities(true, 0, 0, List.of(), null), x -> Optional.empty());
        assertEquals(List.of("file"), order(t));
    }

    @Test
    void onlyTheFileTheConsumersOwnPfsKeepsTheVersionInIsRead() {
        Manifest forged = manifest()
                .replaceLocations(List.of(
                        new Location(URI.create("file:///pfs/other-model/3/model.safetensors"), Tier.PFS),
                        new Location(URI.create("file:///pfs/m/1/../../other-model/3/model.safetensors"), Tier.PFS),
                        new Location(URI.create("file:///etc/passwd"), Tier.PFS),
                        new Location(URI.create("file:///pfs/m/./1/model.safetensors"), Tier.PFS)));
        PathSelector.Selection s = PathSelector.select(
                forged,
                new PathSelector.Capabilities(false, 0, SIZE, List.of()),
                x -> Optional.ofNullable(PROVIDERS.get(x)),
                x -> Optional.empty(),
                m -> Optional.of(OWN_FILE));
        assertEquals(
                List.of("file:///pfs/m/./1/model.safetensors"),
                s.usable().stream().map(c -> c.location().uri().toString()).toList());
        assertEquals(3, s.skipped().size());
        assertTrue(
                s.skipped().stream().allMatch(r -> r.contains("not the file this consumer's PFS keeps m v1 in")),
                s.skipped().toString());

        PathSelector.Selection noPfs = PathSelector.select(
                manifest(),
                new PathSelector.Capabilities(false, 0, SIZE, List.of()),
                x -> Optional.ofNullable(PROVIDERS.get(x)),
                x -> Optional.empty(),
                m -> Optional.empty());
        assertEquals(List.of("tcp"), order(noPfs));
        assertTrue(
                noPfs.skipped().getLast().contains("no viper.pfs.root here"),
                noPfs.skipped().toString());
    }
}
