package io.viper.internal.consumer;

import io.viper.manifest.Location;
import io.viper.manifest.Manifest;
import io.viper.manifest.Tier;
import java.net.ConnectException;
import java.util.List;
import java.util.Locale;
import java.util.random.RandomGenerator;

/**
 * What the consumer's fetch thread does after a version failed to load: how long it waits, and what it says when the
 * producer that announced the version is gone. Stateless; any thread.
 */
final class FetchRetry {
    private FetchRetry() {}

    /**
     * The wait before the next try: between half of {@code backoffMs} and all of it, drawn from {@code random}. Without
     * the spread, the consumers of one producer that restarts all retry at the same moments, together, for as long as
     * it takes.
     */
    static long jittered(long backoffMs, RandomGenerator random) {
        long floor = backoffMs / 2;
        return floor + random.nextLong(backoffMs - floor + 1);
    }

    /** Whether {@code failure} (or a cause of it) is a refused connection: nobody listens at that address now. */
    static boolean refusedConnection(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof ConnectException
                    || String.valueOf(t.getMessage()).toLowerCase(Locale.ROOT).contains("connection refused")) {
                return true;
            }
        }
        return false;
    }

    /**
     * The line for a version every location of which refused the connection: its producer is gone, and with it the
     * version, unless a PFS holds a copy this consumer reads.
     *
     * @param refusedAt the locations that refused
     */
    static String gone(Manifest m, List<String> refusedAt) {
        boolean pfsCopy = m.locations().stream().map(Location::tier).anyMatch(t -> t == Tier.PFS);
        return "version " + m.version() + " of " + m.model() + " was announced by a producer that is gone "
                + "(connection refused at " + String.join(", ", refusedAt) + "); "
                + (pfsCopy
                        ? "its PFS copy is not readable by this consumer (give it the producer's PFS)"
                        : "no PFS copy (a producer with a PFS leaves its versions there when it exits)");
    }
}
