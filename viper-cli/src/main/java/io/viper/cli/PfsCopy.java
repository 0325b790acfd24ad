package io.viper.cli;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.viper.manifest.Location;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Where {@code viper publish} says the PFS copy of a version is. Its {@code file://} location names
 * {@code <root>/<model>/<version>/model.safetensors} for consumers, but a repository that keeps a version as
 * content-addressed blocks writes no such file: the user is told so, and how to get a file ({@code viper export}),
 * rather than shown a path that does not exist.
 */
final class PfsCopy {
    private PfsCopy() {}

    /**
     * {@code {"file": path}} when the version's safetensors file exists, {@code {"blocks": dir, "export": command}}
     * when the repository keeps it as blocks; empty without a {@code file://} location.
     */
    static Optional<ObjectNode> describe(List<Location> locations, String model, long version) {
        for (Location l : locations) {
            if (!"file".equals(l.uri().getScheme())) {
                continue;
            }
            Path file = Path.of(l.uri());
            ObjectNode o = JsonNodeFactory.instance.objectNode();
            if (Files.exists(file)) {
                return Optional.of(o.put("file", file.toString()));
            }
            // <root>/<model>/<version>/model.safetensors
            Path root = file.getParent().getParent().getParent();
            return Optional.of(o.put("blocks", root.resolve(".blocks").toString())
                    .put(
                            "export",
                            "viper export --pfs " + root + " --model " + model + " --version " + version + " --out "
                                    + model + "-v" + version + ".safetensors"));
        }
        return Optional.empty();
    }
}
