package io.viper.errors;

/**
 * An operation did not complete in time: a transfer without progress, a broker that did not acknowledge, a version that
 * did not arrive. Retriable.
 */
public class ViperTimeoutException extends RetriableViperException {
    private static final long serialVersionUID = 1L;

    public ViperTimeoutException(String message) {
        super(Reason.TIMEOUT, message);
    }

    public ViperTimeoutException(String message, Throwable cause) {
        super(Reason.TIMEOUT, message, cause);
    }
}
