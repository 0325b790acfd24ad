package io.viper.errors;

/**
 * A memory budget has no room for an allocation now: the model's own budget or the instance's
 * ({@code viper.memory.host.budget.bytes}, {@code viper.memory.gpu.budget.bytes}) is held by buffers that other
 * versions or other models of the same {@code Viper} instance still use. The message names the model that asked, how
 * many bytes, and who holds what. Retriable ({@link Reason#UNAVAILABLE}): the room comes back as leases close and
 * versions retire.
 */
public class ViperMemoryException extends RetriableViperException {
    private static final long serialVersionUID = 1L;

    private final long requestedBytes;

    public ViperMemoryException(String message, long requestedBytes) {
        super(Reason.UNAVAILABLE, message);
        this.requestedBytes = requestedBytes;
    }

    /** The bytes the refused allocation asked for. */
    public long requestedBytes() {
        return requestedBytes;
    }
}
