package io.viper.errors;

/**
 * An object (a Viper instance, producer, consumer, transport, notifier) was used after, or while, it was closed. Not
 * retriable: the same object will not open again.
 */
public class ViperClosedException extends ViperException {
    private static final long serialVersionUID = 1L;

    public ViperClosedException(String message) {
        super(Reason.CLOSED, message);
    }

    public ViperClosedException(String message, Throwable cause) {
        super(Reason.CLOSED, message, cause);
    }
}
