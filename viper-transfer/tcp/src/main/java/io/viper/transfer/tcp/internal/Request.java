package io.viper.transfer.tcp.internal;

/**
 * A consumer's request to a {@link TcpServer}, as {@link RequestDecoder} reads it from one frame: well-formed (sizes,
 * version, model name, non-negative ranges) but not yet checked against the server's state (lease ids, range bounds).
 * Immutable.
 */
sealed interface Request {
    /** LEASE: take a read lease on {@code model} v{@code version}. */
    record Lease(String model, long version) implements Request {}

    /** READ: stream these ranges of the leased data, in order. */
    record Read(long leaseId, long[] offsets, long[] lengths) implements Request {}

    /** RELEASE: give the lease back. */
    record Release(long leaseId) implements Request {}
}
