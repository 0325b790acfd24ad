/**
 * The viper agent: a local sidecar that owns the Java SDK (producers, consumers, every transport, the notifier, the
 * PFS) and serves processes in other languages over a Unix domain socket, with model bytes in shared-memory files that
 * the agent allocates and its clients map.
 */
module io.viper.agent {
    requires transitive io.viper.core;
    requires com.fasterxml.jackson.databind;
    requires jdk.net;

    exports io.viper.agent;
}
