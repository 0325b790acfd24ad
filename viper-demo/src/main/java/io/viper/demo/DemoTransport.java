package io.viper.demo;

import io.viper.TransferPath;
import io.viper.ViperConfig;
import io.viper.spi.TransportProvider;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * How the demo's checkpoints travel from the producer process to the consumer process, and what that means for each
 * side: one per {@link TransferPath} the demo runs, named, and priced by the cost model, as that path.
 */
public enum DemoTransport {
    /**
     * The model's bytes inside its announcement ({@code viper.producer.inline.bytes}; the demo's model is 9.6 KB), with
     * {@code tcp://} beside it for what does not travel inline.
     */
    INLINE(TransferPath.INLINE, List.of("tcp://127.0.0.1:0"), List.of("tcp")),
    /** {@code ucx://}, with {@code tcp://} as the fallback (the table's path column says which served). */
    HOST(TransferPath.HOST, List.of("ucx://127.0.0.1:0", "tcp://127.0.0.1:0"), List.of("ucx", "tcp")),
    /** {@code tcp://}. */
    TCP(TransferPath.TCP, List.of("tcp://127.0.0.1:0"), List.of("tcp")),
    /** {@code file://}: the producer flushes every version to a PFS directory, the consumer reads it there. */
    PFS(TransferPath.PFS, List.of(), List.of("file"));

    private final TransferPath path;
    private final List<String> producerTransports;
    private final List<String> consumerPaths;

    DemoTransport(TransferPath path, List<String> producerTransports, List<String> consumerPaths) {
        this.path = path;
        this.producerTransports = producerTransports;
        this.consumerPaths = consumerPaths;
    }

    /**
     * The name of the command line and the JSON, the path's: {@code inline}, {@code host}, {@code tcp} or {@code pfs}.
     */
    public String displayName() {
        return path.displayName();
    }

    /** The path the checkpoints take, which {@link io.viper.predictor.CostModel} prices. */
    public TransferPath path() {
        return path;
    }

    /**
     * The producer's {@code viper.producer.inline.bytes}: the default for {@link #INLINE}, 0 for the others, so that
     * their checkpoints take the transport they name.
     */
    public String inlineBytes() {
        return this == INLINE ? ViperConfig.PRODUCER_INLINE_BYTES.defaultValue() : "0";
    }

    /** The transport URIs the producer serves on; empty for PFS only. */
    public List<String> producerTransports() {
        return producerTransports;
    }

    /** The paths the consumer may fetch by, in order of preference. */
    public List<String> consumerPaths() {
        return consumerPaths;
    }

    /** Empty when this transport works here, else why not (only {@code host}, UCX, depends on the machine). */
    public Optional<String> unavailableReason() {
        if (this != HOST) {
            return Optional.empty();
        }
        for (TransportProvider p : ServiceLoader.load(TransportProvider.class, DemoTransport.class.getClassLoader())) {
            if (p.scheme().equals(path.scheme())) {
                return p.unavailableReason();
            }
        }
        return Optional.of("no ucx:// transport is installed");
    }

    /** The default: {@code inline}, the quickest path for the demo's small model; it needs nothing of the machine. */
    public static DemoTransport preferred() {
        return INLINE;
    }

    /** The transport of the path named {@code name} ({@link TransferPath#find}: aliases too), if the demo runs it. */
    public static Optional<DemoTransport> byName(String name) {
        return TransferPath.find(name)
                .flatMap(p -> Arrays.stream(values()).filter(t -> t.path == p).findFirst());
    }

    /** Every name the demo accepts, for messages: {@code inline, host (or ucx), tcp, pfs (or file)}. */
    public static String names() {
        return TransferPath.names(
                Arrays.stream(values()).map(DemoTransport::path).toList());
    }
}
