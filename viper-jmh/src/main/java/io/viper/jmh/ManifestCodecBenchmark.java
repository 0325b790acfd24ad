package io.viper.jmh;

import io.viper.hash.ContentHash;
import io.viper.hash.HashAlgorithm;
import io.viper.manifest.BlockList;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.ManifestCodec;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Encoding and decoding a manifest, which every update does once on each side (the producer encodes the announcement,
 * each consumer decodes it). {@code tensors} tensors of one 1 MiB block each, five metadata entries and two locations;
 * 4 tensors is the demo's model.
 *
 * <pre>java -jar viper-jmh/target/benchmarks.jar ManifestCodecBenchmark -f 1 -wi 3 -i 5</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ManifestCodecBenchmark {
    /** Tensors in the manifest. */
    @Param({"4", "200"})
    public int tensors;

    private Manifest manifest;
    private byte[] encoded;

    @Setup
    public void setUp() {
        LinkedHashMap<String, String> meta = new LinkedHashMap<>();
        meta.put("viper.iteration", "700");
        meta.put("viper.loss", "0.3123123");
        meta.put("viper.producer", "host:4242/0f3a");
        meta.put("viper.wall_time_ms", "1763795000000");
        meta.put("viper.policy", "fixed");
        List<TensorEntry> entries = new ArrayList<>();
        long offset = 0;
        for (int i = 0; i < tensors; i++) {
            long[] shape = i % 2 == 0 ? new long[] {64, 32} : new long[] {32};
            long bytes = (i % 2 == 0 ? 64 * 32 : 32) * 4L;
            ContentHash block =
                    new ContentHash(HashAlgorithm.XXH3_128, 0x1234567890abcdefL * (i + 1), 0x0fedcba987654321L + i);
            entries.add(new TensorEntry(
                    new TensorInfo(
                            "layer" + i / 2 + (i % 2 == 0 ? ".weight" : ".bias"), DType.F32, shape, offset, bytes),
                    new ContentHash(HashAlgorithm.CRC32C, 0, 0x12345678L + i),
                    OptionalLong.empty(),
                    new BlockList(1 << 20, List.of(block))));
            offset += bytes;
        }
        manifest = new Manifest(
                "digits",
                7,
                "host:4242/0f3a",
                1_763_795_000_000_123L,
                meta,
                entries,
                List.of(
                        new Location(URI.create("ucx://127.0.0.1:40123"), Tier.HOST),
                        new Location(URI.create("tcp://127.0.0.1:40124"), Tier.HOST)));
        encoded = ManifestCodec.encode(manifest);
    }

    @Benchmark
    public byte[] encode() {
        return ManifestCodec.encode(manifest);
    }

    @Benchmark
    public Manifest decode() {
        return ManifestCodec.decode(encoded, "bench");
    }
}
