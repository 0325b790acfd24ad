package io.viper.manifest;

import io.viper.errors.ViperConfigException;
import java.net.URI;
import java.util.Locale;
import java.util.Objects;

/**
 * One place a checkpoint's bytes can be read from: a URI whose scheme names the transport ({@code ucx://host:port},
 * {@code tcp://host:port}, {@code file:///pfs/path}, {@code cuda-ipc://...}) and the tier it lives in. Immutable.
 */
public record Location(URI uri, Tier tier) {
    public Location {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(tier, "tier");
        if (uri.getScheme() == null) {
            throw new ViperConfigException("location '" + uri + "' has no scheme");
        }
    }

    /** The transport scheme, lower case. */
    public String scheme() {
        return uri.getScheme().toLowerCase(Locale.ROOT);
    }

    @Override
    public String toString() {
        return uri + " (" + tier + ")";
    }
}
