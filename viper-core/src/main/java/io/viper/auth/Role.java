package io.viper.auth;

/**
 * What an authenticated peer may do. A producer's secret grants both roles (it derives the consumer key); a consumer
 * token only {@link #CONSUMER}.
 */
public enum Role {
    /** Publishes manifests, subscribes, reads; runs servers and brokers. */
    PRODUCER(1),
    /** Subscribes to manifests and reads models; cannot publish. */
    CONSUMER(2);

    private final int code;

    Role(int code) {
        this.code = code;
    }

    /** The byte naming this role on the wire. */
    public int code() {
        return code;
    }

    /** The role a wire byte names, or null for none or an unknown one. */
    static Role ofCode(int code) {
        for (Role r : values()) {
            if (r.code == code) {
                return r;
            }
        }
        return null;
    }

    /** Whether this role may announce manifests. */
    public boolean mayPublish() {
        return this == PRODUCER;
    }
}
