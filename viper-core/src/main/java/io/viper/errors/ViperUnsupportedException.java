package io.viper.errors;

/**
 * This machine lacks a device, driver or library the operation needs: no CUDA driver or device, UCX not installed, a
 * transport that cannot write into GPU memory. Not retriable: something has to be installed, or the request changed.
 */
public class ViperUnsupportedException extends ViperException {
    private static final long serialVersionUID = 1L;

    public ViperUnsupportedException(String message) {
        super(Reason.UNSUPPORTED, message);
    }

    public ViperUnsupportedException(String message, Throwable cause) {
        super(Reason.UNSUPPORTED, message, cause);
    }
}
