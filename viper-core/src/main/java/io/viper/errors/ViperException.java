package io.viper.errors;

import java.util.Objects;

/**
 * Root of every error Viper reports through its API. Unchecked, like Kafka's {@code KafkaException}: callers catch the
 * subtype they can act on. {@link #reason()} classifies the failure for logs, metrics and the CLI's exit code; whether
 * trying again may help follows from the reason alone ({@link Reason#isRetriable()}), and the retriable reasons are
 * exactly those thrown as a {@link RetriableViperException}.
 *
 * <p>Each reason is thrown as one type, the one {@link #of(Reason, String, Throwable)} returns (the table is in the
 * {@link io.viper.errors package documentation}); the subtypes' constructors fix their reason, so that a throw site
 * cannot contradict it.
 *
 * <p>Messages are one line that name the thing (file, tensor, URI, config key) and the problem, so that the CLI can
 * print them to a user as they are.
 */
public class ViperException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** What kind of failure this is; stable names, used as metric tags. */
    public enum Reason {
        /** A file, header or message is malformed. */
        FORMAT(false),
        /**
         * A configuration key, URI or argument is invalid, or a peer refuses the request as configured (credentials,
         * permissions, limits).
         */
        CONFIG(false),
        /** Bytes arrived but did not match their content hash; another location may hold good ones. */
        CORRUPT(true),
        /** A transfer over a transport failed: the connection broke, the producer went away mid-read. */
        TRANSFER(true),
        /** The named model, version, tensor or file does not exist (or no longer does, where it was looked for). */
        NOT_FOUND(false),
        /** A peer, broker or resource is not reachable or has no room now. */
        UNAVAILABLE(true),
        /** This machine lacks a device, driver or library the operation needs (no CUDA driver, UCX not installed). */
        UNSUPPORTED(false),
        /** An operation did not complete in time. */
        TIMEOUT(true),
        /** The object was used after {@code close()}. */
        CLOSED(false),
        /**
         * Local I/O failed (disk full, permission denied). Not retriable: the same write to the same disk fails the
         * same way until someone frees space or fixes permissions.
         */
        IO(false),
        /** A bug or an unexpected state. */
        INTERNAL(false);

        private final boolean retriable;

        Reason(boolean retriable) {
            this.retriable = retriable;
        }

        /**
         * Whether trying the same operation again may succeed; a failure of this reason is a
         * {@link RetriableViperException} exactly when true.
         */
        public boolean isRetriable() {
            return retriable;
        }
    }

    private final Reason reason;

    /**
     * For the reasons thrown as this class itself ({@code IO}, {@code INTERNAL}) and for subclasses; prefer
     * {@link #of(Reason, String)} or a subtype's constructor, which pick the type for the reason.
     */
    public ViperException(Reason reason, String message) {
        super(message);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** As {@link #ViperException(Reason, String)}, with the exception that caused this one (may be null). */
    @SuppressWarnings("this-escape") // initCause is Throwable's; no subclass overrides it
    public ViperException(Reason reason, String message, Throwable cause) {
        super(message);
        this.reason = Objects.requireNonNull(reason, "reason");
        if (cause != null) {
            initCause(cause);
        }
    }

    /** The exception for {@code reason}, of the type that reason is thrown as. */
    public static ViperException of(Reason reason, String message) {
        return of(reason, message, null);
    }

    /**
     * The exception for {@code reason}, of the type that reason is thrown as: {@link ViperFormatException},
     * {@link ViperConfigException}, {@link ViperCorruptDataException}, {@link ViperNotFoundException},
     * {@link ViperUnsupportedException}, {@link ViperTimeoutException}, {@link ViperClosedException},
     * {@link RetriableViperException} for TRANSFER and UNAVAILABLE, this class for IO and INTERNAL.
     *
     * @param cause may be null
     */
    public static ViperException of(Reason reason, String message, Throwable cause) {
        return switch (Objects.requireNonNull(reason, "reason")) {
            case FORMAT -> new ViperFormatException(message, cause);
            case CONFIG -> new ViperConfigException(message, cause);
            case CORRUPT -> new ViperCorruptDataException(message, cause);
            case NOT_FOUND -> new ViperNotFoundException(message, cause);
            case UNSUPPORTED -> new ViperUnsupportedException(message, cause);
            case TIMEOUT -> new ViperTimeoutException(message, cause);
            case CLOSED -> new ViperClosedException(message, cause);
            case TRANSFER, UNAVAILABLE -> new RetriableViperException(reason, message, cause);
            case IO, INTERNAL -> new ViperException(reason, message, cause);
        };
    }

    /** The failure class of this exception. */
    public Reason reason() {
        return reason;
    }

    /** Whether trying the same operation again may succeed: {@link Reason#isRetriable()} of {@link #reason()}. */
    public final boolean isRetriable() {
        return reason.isRetriable();
    }
}
