package io.viper;

import io.viper.errors.ViperConfigException;
import io.viper.manifest.Tier;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The ways a model's bytes travel from a producer to a consumer, by the names the tools give them: {@code viper bench
 * transfer --paths}, {@code viper demo --transport} and the lines of viper-predictor's {@code CostModel}. Each path
 * carries its name, the URI scheme of the transport that serves it (the scheme a consumer reports after a load), the
 * {@link Tier} the consumer's path selection ranks it in, and the cost line that prices it. Names are read here and
 * nowhere else; each tool's older name for a path ({@code ucx}, {@code file}, {@code cuda-ipc}, {@code cuda-pipe}) is
 * accepted as an alias, so that existing flags keep working. Immutable; any thread may use it.
 */
public enum TransferPath {
    /**
     * The model's bytes inside its announcement ({@code viper.producer.inline.bytes}); priced as host memory, where the
     * bytes land.
     */
    INLINE("inline", "inline", Tier.HOST, "host"),
    /** UCX shared memory or RDMA between host memories ({@code ucx://}). */
    HOST("host", "ucx", Tier.HOST, "host", "ucx"),
    /** A TCP connection between host memories ({@code tcp://}). */
    TCP("tcp", "tcp", Tier.HOST, "tcp"),
    /** The producer's file in the parallel file system, mapped in place by the consumer ({@code file://}). */
    PFS("pfs", "file", Tier.PFS, "pfs", "file"),
    /** CUDA IPC between GPUs of one node ({@code cuda-ipc://}). */
    GPU("gpu", "cuda-ipc", Tier.GPU, "gpu", "cuda-ipc"),
    /**
     * GPU to GPU across nodes, pipelined over TCP ({@code cuda-pipe://}); priced as TCP, the connection its bytes
     * cross.
     */
    GPU_PIPE("gpu-pipe", "cuda-pipe", Tier.GPU, "tcp", "cuda-pipe");

    private final String displayName;
    private final String scheme;
    private final Tier tier;
    private final String costLine;
    private final List<String> aliases;

    TransferPath(String displayName, String scheme, Tier tier, String costLine, String... aliases) {
        this.displayName = displayName;
        this.scheme = scheme;
        this.tier = tier;
        this.costLine = costLine;
        this.aliases = List.of(aliases);
    }

    /** The name of the command lines, reports and JSON: {@code inline}, {@code host}, {@code tcp}, ... */
    public String displayName() {
        return displayName;
    }

    /** The URI scheme of the transport that serves this path: {@code ucx} for {@link #HOST}, ... */
    public String scheme() {
        return scheme;
    }

    /** Where the bytes this path delivers live, as the consumer's path selection ranks them. */
    public Tier tier() {
        return tier;
    }

    /** The cost model's line that prices this path: {@code gpu}, {@code host}, {@code tcp} or {@code pfs}. */
    public String costLine() {
        return costLine;
    }

    /** Older names of this path that {@link #parse} accepts too. */
    public List<String> aliases() {
        return aliases;
    }

    @Override
    public String toString() {
        return displayName;
    }

    /** The path named {@code name} or one of its aliases, ignoring case and surrounding blanks. */
    public static Optional<TransferPath> find(String name) {
        if (name == null) {
            return Optional.empty();
        }
        String n = name.strip().toLowerCase(Locale.ROOT);
        return Arrays.stream(values())
                .filter(p -> p.displayName.equals(n) || p.aliases.contains(n))
                .findFirst();
    }

    /**
     * The path named {@code name} or one of its aliases, ignoring case and surrounding blanks.
     *
     * @throws ViperConfigException for any other name, naming the accepted ones
     */
    public static TransferPath parse(String name) {
        return find(name)
                .orElseThrow(() -> new ViperConfigException("unknown path '" + (name == null ? null : name.strip())
                        + "' (accepted: " + names(List.of(values())) + ")"));
    }

    /** The names {@code paths} accept, for messages: {@code inline, host (or ucx), tcp}. */
    public static String names(Collection<TransferPath> paths) {
        return paths.stream()
                .map(p -> p.displayName + (p.aliases.isEmpty() ? "" : " (or " + String.join(", ", p.aliases) + ")"))
                .collect(Collectors.joining(", "));
    }
}
