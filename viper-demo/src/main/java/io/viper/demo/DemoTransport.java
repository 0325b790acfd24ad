package io.viper.demo;

import io.viper.ViperConfig;
import io.viper.spi.TransportProvider;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * How the demo's checkpoints travel from the producer process to the consumer process, and what that
 * means for each side and for the cost model.
 */
public enum DemoTransport {
    /**
     * The model's bytes inside its announcement ({@code viper.producer.inline.bytes}; the demo's model
     * is 9.6 KB), with {@code tcp://} beside it for what does not travel inline.
     */
    INLINE("inline", List.of("tcp://127.0.0.1:0"), List.of("tcp")),
    /** {@code ucx://}, with {@code tcp://} as the fallback (the table's path column says which served). */
    UCX("host", List.of("ucx://127.0.0.1:0", "tcp://127.0.0.1:0"), List.of("ucx", "tcp")),
    /** {@code tcp://}. */
    TCP("tcp", List.of("tcp://127.0.0.1:0"), List.of("tcp")),
    /** {@code file://}: the producer flushes every version to a PFS directory, the consumer reads it there. */
    FILE("pfs", List.of(), List.of("file"));

    private final String costPath;
    private final List<String> producerTransports;
    private final List<String> consumerPaths;

    DemoTransport(String costPath, List<String> producerTransports, List<String> consumerPaths) {
        this.costPath = costPath;
        this.producerTransports = producerTransports;
        this.consumerPaths = consumerPaths;
    }

    /** The lower-case name of the command line and the JSON ({@code inline}, {@code ucx}, {@code tcp}, {@code file}). */
    public String displayName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The path of {@link io.viper.predictor.CostModel} that prices this transport. */
    public String costPath() {
        return costPath;
    }

    /**
     * The producer's {@code viper.producer.inline.bytes}: the default for {@link #INLINE}, 0 for the
     * others, so that their checkpoints take the transport they name.
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

    /** Empty when this transport works here, else why not (only {@code ucx} depends on the machine). */
    public Optional<String> unavailableReason() {
        if (this != UCX) {
            return Optional.empty();
        }
        for (TransportProvider p : ServiceLoader.load(TransportProvider.class, DemoTransport.class.getClassLoader())) {
            if (p.scheme().equals("ucx")) {
                return p.unavailableReason();
            }
        }
        return Optional.of("no ucx:// transport is installed");
    }

    /** The default: {@code inline}, the quickest path for the demo's small model; it needs nothing of the machine. */
    public static DemoTransport preferred() {
        return INLINE;
    }

    /** The transport named {@code name}, ignoring case and surrounding blanks. */
    public static Optional<DemoTransport> byName(String name) {
        return Arrays.stream(values()).filter(t -> t.displayName().equalsIgnoreCase(name.strip())).findFirst();
    }

    /** Every name, for messages: {@code inline, ucx, tcp or file}. */
    public static String names() {
        List<String> n = Arrays.stream(values()).map(DemoTransport::displayName).toList();
        return String.join(", ", n.subList(0, n.size() - 1)) + " or " + n.getLast();
    }
}
