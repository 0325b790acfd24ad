package io.viper.transfer.tcp.internal;

import java.net.URI;
import java.util.List;

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

    /** TRACK: where should this reader read {@code model} v{@code version} from (the producer's tracker). */
    record Track(String model, long version, List<URI> relay, List<URI> failed) implements Request {}

    /** RELEASE: give the lease back. */
    record Release(long leaseId) implements Request {}
}
