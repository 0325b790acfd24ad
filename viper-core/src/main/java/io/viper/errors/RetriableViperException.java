package io.viper.errors;

/**
 * A failure that may go away when the operation is tried again: a peer that went away mid-transfer, a broker that is
 * restarting, a timeout. Callers typically fall back to the next location or retry with backoff. Thrown as this class
 * for {@code TRANSFER} and {@code UNAVAILABLE}; {@code TIMEOUT} and {@code CORRUPT} have subtypes.
 */
public class RetriableViperException extends ViperException {
    private static final long serialVersionUID = 1L;

    /** @throws IllegalArgumentException when {@code reason} is not {@linkplain Reason#isRetriable() retriable} */
    public RetriableViperException(Reason reason, String message) {
        this(reason, message, null);
    }

    /** @throws IllegalArgumentException when {@code reason} is not {@linkplain Reason#isRetriable() retriable} */
    public RetriableViperException(Reason reason, String message, Throwable cause) {
        super(requireRetriable(reason), message, cause);
    }

    private static Reason requireRetriable(Reason reason) {
        if (reason != null && !reason.isRetriable()) {
            throw new IllegalArgumentException(reason + " is not retriable; throw it with ViperException.of");
        }
        return reason;
    }
}
