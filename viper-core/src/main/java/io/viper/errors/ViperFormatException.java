package io.viper.errors;

/**
 * A file or message that does not follow its format: a malformed safetensors header, a manifest that does not parse, a
 * path that is not a regular file. The message names the source (file or peer), the tensor where one applies, and the
 * problem. Not retriable: the same bytes fail the same way.
 */
public class ViperFormatException extends ViperException {
    private static final long serialVersionUID = 1L;

    private final String source;

    public ViperFormatException(String source, String problem) {
        super(Reason.FORMAT, source + ": " + problem);
        this.source = source;
    }

    public ViperFormatException(String source, String problem, Throwable cause) {
        super(Reason.FORMAT, source + ": " + problem, cause);
        this.source = source;
    }

    /** For {@link ViperException#of}: a message that names its source itself. */
    ViperFormatException(String message, Throwable cause) {
        super(Reason.FORMAT, message, cause);
        this.source = "";
    }

    /** The file or peer the malformed input came from; empty where the message names it itself. */
    public String source() {
        return source;
    }

    /** The problem alone, without the source prefix. */
    public String problem() {
        return source.isEmpty() ? getMessage() : getMessage().substring(source.length() + 2);
    }
}
