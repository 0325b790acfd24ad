package io.viper.agent.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * What a connection does for its client after {@code hello}: a producer's or a consumer's requests. One connection's
 * thread.
 */
interface Session {
    /** The version the client starts from: the newest published (producer) or serving (consumer), 0 if none. */
    long version();

    /**
     * Handles one request and returns the fields of its reply, or null when the request wants none.
     *
     * @throws io.viper.errors.ViperException refused or failed; the client gets it as an error reply
     */
    ObjectNode handle(Request request);

    /** The client went away (or the agent stops): releases what it held, with one log line if that was anything. */
    void close();
}
