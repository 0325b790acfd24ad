package io.viper.errors;

/**
 * An invalid configuration value, URI or argument, or a request a peer refuses as configured (credentials, permissions,
 * limits). The message names the key and the value. Not retriable: the input has to change.
 */
public class ViperConfigException extends ViperException {
    private static final long serialVersionUID = 1L;

    public ViperConfigException(String message) {
        super(Reason.CONFIG, message);
    }

    public ViperConfigException(String message, Throwable cause) {
        super(Reason.CONFIG, message, cause);
    }
}
