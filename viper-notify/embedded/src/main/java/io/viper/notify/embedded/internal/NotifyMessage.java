package io.viper.notify.embedded.internal;

/**
 * One frame of the embedded broker protocol as {@link NotifyDecoder} reads it: well-formed (version, sizes, model
 * names), not yet checked against the reader's state. Immutable; manifest bytes are copied out of the frame and owned
 * by the message.
 */
sealed interface NotifyMessage {

    // Client -> broker.

    /** HELLO: a client introduces itself; the broker answers WELCOME. */
    record Hello() implements NotifyMessage {}

    /** SUBSCRIBE to a model's manifests. */
    record Subscribe(String model) implements NotifyMessage {}

    /** UNSUBSCRIBE from a model's manifests. */
    record Unsubscribe(String model) implements NotifyMessage {}

    /** PUBLISH an announcement of {@code model}; answered by an ACK or ERROR with {@code requestId}. */
    record Publish(long requestId, String model, Announcement announcement) implements NotifyMessage {}

    /**
     * LATEST: asks for the newest version of {@code model} the broker accepted; answered by an ACK with status KNOWN.
     */
    record Latest(long requestId, String model) implements NotifyMessage {}

    // Broker -> client.

    /** WELCOME: the answer to HELLO, with how long the broker lets a connection stay silent. */
    record Welcome(long idleMs) implements NotifyMessage {}

    /** MANIFEST: the latest announcement of a subscribed model. */
    record Manifest(String model, Announcement announcement) implements NotifyMessage {}

    /**
     * ACK of a publish ({@link NotifyProtocol#ACCEPTED} or {@link NotifyProtocol#STALE}) or of a LATEST
     * ({@link NotifyProtocol#KNOWN}), and the broker's latest version.
     */
    record Ack(long requestId, byte status, long latestVersion) implements NotifyMessage {}

    /** ERROR: a refused publish ({@code requestId} > 0) or a broken protocol (0); {@code code} is an {@code ERR_*}. */
    @SuppressWarnings("AvoidCommonTypeNames") // the protocol's ERROR frame; always written NotifyMessage.Error
    record Error(long requestId, byte code, String reason) implements NotifyMessage {}
}
