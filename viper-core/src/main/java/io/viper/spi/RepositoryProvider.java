package io.viper.spi;

import java.net.URI;
import java.util.Map;

/** Opens {@link CheckpointRepository repositories} for a URI scheme ({@code file}); found with ServiceLoader. */
public interface RepositoryProvider {
    String scheme();

    /** Opens (creating if needed) the repository rooted at {@code root}. */
    CheckpointRepository open(URI root, Map<String, String> config);
}
