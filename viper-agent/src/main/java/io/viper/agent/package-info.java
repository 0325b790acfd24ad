/**
 * The viper agent ({@link io.viper.agent.ViperAgent}): serves local clients, such as the Python package in
 * {@code clients/python}, over a Unix domain socket. The protocol is described in {@code docs/agent-protocol.md} and
 * versioned by {@link io.viper.agent.AgentProtocol#VERSION}.
 */
package io.viper.agent;
