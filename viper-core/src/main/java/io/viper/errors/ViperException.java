package io.viper.errors;

/**
 * Root of every error Viper reports through its API. Unchecked, like Kafka's {@code KafkaException}:
 * callers catch the subtype they can act on. {@link #reason()} classifies the failure for logs and
 * metrics; {@link RetriableViperException} marks failures that may succeed when tried again.
 *
 * <p>Messages are one line that name the thing (file, tensor, URI, config key) and the problem, so
 * that the CLI can print them to a user as they are.
 */
public class ViperException extends RuntimeException {
    /** What kind of failure this is; stable names, used as metric tags. */
    public enum Reason {
        /** A file, header or message is malformed. */
        FORMAT,
        /** A configuration key, URI or argument is invalid. */
        CONFIG,
        /** Bytes arrived but did not match their content hash. */
        CORRUPT,
        /** A transfer over a transport failed. */
        TRANSFER,
        /** The named model, version, tensor or file does not exist. */
        NOT_FOUND,
        /** A peer, broker, device or library is not reachable or not installed. */
        UNAVAILABLE,
        /** An operation did not complete in time. */
        TIMEOUT,
        /** The object was used after {@code close()}. */
        CLOSED,
        /** Local I/O failed (disk full, permission denied). */
        IO,
        /** A bug or an unexpected state. */
        INTERNAL
    }

    private final Reason reason;

    public ViperException(Reason reason, String message) {
        super(message);
        this.reason = java.util.Objects.requireNonNull(reason, "reason");
    }

    public ViperException(Reason reason, String message, Throwable cause) {
        super(message, cause);
        this.reason = java.util.Objects.requireNonNull(reason, "reason");
    }

    /** The failure class of this exception. */
    public Reason reason() {
        return reason;
    }

    /** Whether trying the same operation again may succeed. */
    public boolean isRetriable() {
        return false;
    }
}
