package io.viper.spi;

import io.viper.ViperConfig;
import io.viper.config.ConfigKey;
import java.net.URI;
import java.util.List;

/** Opens {@link CheckpointRepository repositories} for a URI scheme ({@code file}); found with ServiceLoader. */
public interface RepositoryProvider {
    String scheme();

    /** The configuration keys this repository declares; see {@link TransportProvider#configKeys()}. */
    default List<ConfigKey<?>> configKeys() {
        return List.of();
    }

    /** Opens (creating if needed) the repository rooted at {@code root}; {@code config} is validated. */
    CheckpointRepository open(URI root, ViperConfig config);
}
