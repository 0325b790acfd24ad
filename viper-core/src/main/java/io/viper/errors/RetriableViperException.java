package io.viper.errors;

/**
 * A failure that may go away when the operation is tried again: a peer that went away mid-transfer,
 * a broker that is restarting, a timeout. Callers typically fall back to the next location or retry
 * with backoff.
 */
public class RetriableViperException extends ViperException {
    public RetriableViperException(Reason reason, String message) {
        super(reason, message);
    }

    public RetriableViperException(Reason reason, String message, Throwable cause) {
        super(reason, message, cause);
    }

    @Override
    public boolean isRetriable() {
        return true;
    }
}
