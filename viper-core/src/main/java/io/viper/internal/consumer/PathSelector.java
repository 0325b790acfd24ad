package io.viper.internal.consumer;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.spi.TransportProvider;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * Cache-aware path selection (docs/architecture.md#path-selection): orders the locations of a manifest by what this
 * consumer can use. First the bytes the version's announcement carried, when the consumer has them
 * ({@link InlineLoader#LOCATION}, no transfer; a consumer that serves on GPU takes none); then GPU when it serves on
 * GPU and has room, else host when the host budget allows a receive buffer, else the PFS (mapped in place, no buffer
 * needed). Within a tier, the transport's priority (ucx before tcp), then the producer's order. A {@code file://}
 * location is used only when it is the file this consumer's own PFS repository keeps that model and version in, so that
 * a forged manifest cannot point it at another model's weights or any other file. Stateless and thread-safe.
 */
public final class PathSelector {

    /**
     * What the consumer can do right now.
     *
     * @param servesOnGpu whether it serves on a GPU and a GPU provider works here
     * @param freeGpuBytes GPU memory it may use for the arriving model
     * @param freeHostBytes host memory it may use for the arriving model
     * @param allowedSchemes schemes it may use; empty: all
     * @param noGpuReason why GPU locations are skipped when {@code servesOnGpu} is false
     * @param inline whether and how to use the bytes the version's announcement carried
     */
    public record Capabilities(
            boolean servesOnGpu,
            long freeGpuBytes,
            long freeHostBytes,
            List<String> allowedSchemes,
            String noGpuReason,
            InlineBytes inline) {
        /** Capabilities without the announcement's bytes. */
        public Capabilities(
                boolean servesOnGpu,
                long freeGpuBytes,
                long freeHostBytes,
                List<String> allowedSchemes,
                String noGpuReason) {
            this(servesOnGpu, freeGpuBytes, freeHostBytes, allowedSchemes, noGpuReason, InlineBytes.NONE);
        }

        /** Capabilities of a consumer that serves on host, without the announcement's bytes. */
        public Capabilities(boolean servesOnGpu, long freeGpuBytes, long freeHostBytes, List<String> allowedSchemes) {
            this(servesOnGpu, freeGpuBytes, freeHostBytes, allowedSchemes, "consumer serves on host");
        }
    }

    /**
     * The bytes of the version its announcement carried ({@code viper.producer.inline.bytes}), as the consumer may use
     * them. They are not subject to {@code viper.consumer.paths}: {@code viper.consumer.inline} decides whether a
     * consumer takes them.
     */
    public enum InlineBytes {
        /** None: the announcement carried none, the consumer declines them, or they failed verification. */
        NONE,
        /** Here: {@link InlineLoader#LOCATION} first, then the manifest's locations. */
        FIRST,
        /**
         * Here, on the notifier's thread with a receive buffer free now: {@link InlineLoader#LOCATION} alone, since
         * that thread waits on no transport (the fetch thread tries the others).
         */
        ONLY
    }

    /** A usable location and why it was ranked there. */
    public record Candidate(Location location, int priority, String reason) {}

    /** Usable locations in the order to try, and the ones skipped with their reason. */
    public record Selection(List<Candidate> usable, List<String> skipped) {
        /** One line for logs: the first choice and the skipped ones. */
        public String describe() {
            String first = usable.isEmpty()
                    ? "no usable location"
                    : "using " + usable.getFirst().location().uri() + " ("
                            + usable.getFirst().reason() + ")";
            return skipped.isEmpty() ? first : first + "; skipped " + String.join("; ", skipped);
        }
    }

    /** Ahead of every transport's priority: the bytes are here already. */
    private static final int INLINE_PRIORITY = Integer.MIN_VALUE;

    private PathSelector() {}

    /**
     * The locations of {@code manifest} this consumer can use, in the order to try them, and the skipped ones.
     *
     * @param providers the transport for a scheme, or empty when none is installed
     * @param unavailable why a scheme's transport cannot run here, or empty when it can
     * @param ownFile where this consumer's PFS repository keeps the manifest's version, or empty without one
     */
    public static Selection select(
            Manifest manifest,
            Capabilities caps,
            Function<String, Optional<TransportProvider>> providers,
            Function<String, Optional<String>> unavailable,
            Function<Manifest, Optional<Location>> ownFile) {
        long size = manifest.totalBytes();
        List<Candidate> usable = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        if (caps.inline() != InlineBytes.NONE) {
            if (caps.freeHostBytes() < size) {
                skipped.add(InlineLoader.LOCATION.uri() + ": " + size + " bytes exceed the free host budget "
                        + caps.freeHostBytes());
            } else {
                usable.add(new Candidate(InlineLoader.LOCATION, INLINE_PRIORITY, "in its announcement, no transfer"));
            }
            if (caps.inline() == InlineBytes.ONLY) {
                return new Selection(List.copyOf(usable), List.copyOf(skipped));
            }
        }
        for (Location l : manifest.locations()) {
            String scheme = l.scheme();
            if (!caps.allowedSchemes().isEmpty() && !caps.allowedSchemes().contains(scheme)) {
                skipped.add(l.uri() + ": " + scheme + " not in viper.consumer.paths");
                continue;
            }
            Optional<TransportProvider> p = providers.apply(scheme);
            if (p.isEmpty()) {
                skipped.add(l.uri() + ": no " + scheme + ":// transport installed");
                continue;
            }
            Optional<String> why = unavailable.apply(scheme);
            if (why.isPresent()) {
                skipped.add(l.uri() + ": " + why.get());
                continue;
            }
            String reason;
            switch (l.tier()) {
                case GPU -> {
                    if (!caps.servesOnGpu()) {
                        skipped.add(l.uri() + ": "
                                + (caps.noGpuReason() == null ? "consumer serves on host" : caps.noGpuReason()));
                        continue;
                    }
                    if (caps.freeGpuBytes() < size) {
                        skipped.add(l.uri() + ": " + size + " bytes exceed free GPU memory " + caps.freeGpuBytes());
                        continue;
                    }
                    reason = "GPU tier, fits free GPU memory";
                }
                case HOST -> {
                    if (caps.freeHostBytes() < size) {
                        skipped.add(
                                l.uri() + ": " + size + " bytes exceed the free host budget " + caps.freeHostBytes());
                        continue;
                    }
                    reason = "host tier, fits the host budget";
                }
                case PFS -> {
                    Optional<String> foreign = scheme.equals("file")
                            ? foreignFile(manifest, l, ownFile.apply(manifest))
                            : Optional.empty();
                    if (foreign.isPresent()) {
                        skipped.add(l.uri() + ": " + foreign.get());
                        continue;
                    }
                    reason = "PFS tier, mapped in place";
                }
                default -> throw new IllegalStateException("unknown tier " + l.tier());
            }
            usable.add(new Candidate(l, p.get().priority(), reason));
        }
        List<Candidate> ordered = new ArrayList<>(usable);
        // Stable sort: the producer's order breaks ties.
        ordered.sort(Comparator.comparing((Candidate c) -> c.location().tier()).thenComparingInt(Candidate::priority));
        return new Selection(List.copyOf(ordered), List.copyOf(skipped));
    }

    /** Why {@code l} is not the file {@code own} names for the manifest's version, or empty when it is. */
    private static Optional<String> foreignFile(Manifest m, Location l, Optional<Location> own) {
        if (own.isEmpty()) {
            return Optional.of("no viper.pfs.root here: file:// locations are read only from this consumer's own PFS");
        }
        try {
            if (Path.of(l.uri()).normalize().equals(Path.of(own.get().uri()).normalize())) {
                return Optional.empty();
            }
        } catch (IllegalArgumentException | FileSystemNotFoundException e) {
            return Optional.of("not a local file URI");
        }
        return Optional.of("not the file this consumer's PFS keeps " + m.model() + " v" + m.version() + " in ("
                + own.get().uri() + ")");
    }
}
