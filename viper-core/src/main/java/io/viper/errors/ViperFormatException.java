package io.viper.errors;

/**
 * A file or message that does not follow its format: a malformed safetensors header, a manifest
 * that does not parse. The message names the source (file or peer), the tensor where one applies,
 * and the problem. Not retriable: the same bytes fail the same way.
 */
public class ViperFormatException extends ViperException {
    private final String source;

    public ViperFormatException(String source, String problem) {
        super(Reason.FORMAT, source + ": " + problem);
        this.source = source;
    }

    public ViperFormatException(String source, String problem, Throwable cause) {
        super(Reason.FORMAT, source + ": " + problem, cause);
        this.source = source;
    }

    /** The file or peer the malformed input came from. */
    public String source() {
        return source;
    }

    /** The problem alone, without the source prefix. */
    public String problem() {
        return getMessage().substring(source.length() + 2);
    }
}
