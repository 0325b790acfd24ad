package io.viper.errors;

/**
 * Bytes that arrived but do not match the content hash the manifest promised. Retriable: another location (finally the
 * PFS) may hold good bytes.
 */
public class ViperCorruptDataException extends RetriableViperException {
    private static final long serialVersionUID = 1L;

    public ViperCorruptDataException(String message) {
        super(Reason.CORRUPT, message);
    }

    public ViperCorruptDataException(String message, Throwable cause) {
        super(Reason.CORRUPT, message, cause);
    }
}
