package io.viper.errors;

/**
 * The named model, version, tensor or file does not exist, or no longer does where it was looked for (a producer that
 * recycled the version). Not retriable: asking the same place again gives the same answer; a consumer falls back to the
 * version's other locations.
 */
public class ViperNotFoundException extends ViperException {
    private static final long serialVersionUID = 1L;

    public ViperNotFoundException(String message) {
        super(Reason.NOT_FOUND, message);
    }

    public ViperNotFoundException(String message, Throwable cause) {
        super(Reason.NOT_FOUND, message, cause);
    }
}
