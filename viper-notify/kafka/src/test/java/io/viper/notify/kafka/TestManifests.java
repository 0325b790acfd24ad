package io.viper.notify.kafka;

import io.viper.hash.ContentHash;
import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.TensorEntry;
import io.viper.manifest.Tier;
import io.viper.tensor.DType;
import io.viper.tensor.TensorInfo;
import java.net.URI;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;

/** Small manifests for the Kafka notifier tests: one F32 tensor whose hash encodes the version. */
final class TestManifests {
    private TestManifests() {}

    /**
     * A manifest of {@code model} v{@code version} offered at {@code locations} ({@code file:} ones in the PFS tier).
     */
    static Manifest manifest(String model, long version, String... locations) {
        List<Location> locs = new ArrayList<>();
        for (String l : locations) {
            locs.add(new Location(URI.create(l), l.startsWith("file:") ? Tier.PFS : Tier.HOST));
        }
        var meta = new LinkedHashMap<String, String>();
        meta.put("viper.iteration", Long.toString(version * 100));
        return new Manifest(
                model,
                version,
                "kafka-it",
                Manifest.nowMicros(),
                meta,
                List.of(new TensorEntry(
                        new TensorInfo("dense.weight", DType.F32, new long[] {4, 4}, 0, 64),
                        new ContentHash(version, 7))),
                locs);
    }

    /** The PFS location of {@code model} v{@code version} under the repository root {@code /pfs/viper}. */
    static String pfs(String model, long version) {
        return "file:///pfs/viper/" + model + "/" + version + "/model.safetensors";
    }
}
