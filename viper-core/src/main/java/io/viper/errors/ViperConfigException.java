package io.viper.errors;

/** An invalid configuration value, URI or argument. The message names the key and the value. */
public class ViperConfigException extends ViperException {
    public ViperConfigException(String message) {
        super(Reason.CONFIG, message);
    }

    public ViperConfigException(String message, Throwable cause) {
        super(Reason.CONFIG, message, cause);
    }
}
