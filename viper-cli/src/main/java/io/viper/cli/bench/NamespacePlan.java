package io.viper.cli.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * The simulated cluster of {@code viper bench fleet} as the commands that make and remove it, without running them: one
 * network namespace per node ({@code <prefix>n0} the producer's, {@code <prefix>n1} on the consumers'), each with an
 * {@code eth0} whose other end is a port of a bridge in a namespace of its own ({@code <prefix>br}), so that nothing is
 * added to the host's interfaces, and addresses only inside these namespaces ({@code 10.77.0.0/24}). Every node's link
 * is capped both ways with a token bucket at the link rate: on {@code eth0} what the node sends, on its bridge port
 * what it receives. Removing the namespaces removes the veths and the bridge with them. Immutable.
 *
 * @param prefix what every namespace's name starts with, so that the leftovers of a killed run are found
 * @param nodes nodes in all: the producer's and the consumers'
 * @param rate each node's link, both ways
 */
public record NamespacePlan(String prefix, int nodes, LinkRate rate) {
    /** The prefix the bench uses. */
    public static final String PREFIX = "vpf-";
    /** tc's token bucket besides the rate, as the issue measured it. */
    static final List<String> TBF = List.of("burst", "512kb", "latency", "100ms");

    public NamespacePlan {
        if (nodes < 2 || nodes > 254) {
            throw new IllegalArgumentException("nodes " + nodes + ": from 2 to 254 (one /24)");
        }
    }

    /** The namespace of node {@code i} (0: the producer). */
    public String namespace(int i) {
        return prefix + "n" + i;
    }

    /** The namespace that holds the bridge. */
    public String bridgeNamespace() {
        return prefix + "br";
    }

    /** Node {@code i}'s address on the bridge. */
    public String address(int i) {
        return "10.77.0." + (i + 1);
    }

    /** The commands that make the cluster, in order. */
    public List<List<String>> setup() {
        String br = bridgeNamespace();
        List<List<String>> c = new ArrayList<>();
        c.add(List.of("ip", "netns", "add", br));
        c.add(List.of("ip", "-n", br, "link", "set", "lo", "up"));
        c.add(List.of("ip", "-n", br, "link", "add", "br0", "type", "bridge"));
        c.add(List.of("ip", "-n", br, "link", "set", "br0", "up"));
        for (int i = 0; i < nodes; i++) {
            String ns = namespace(i);
            String port = "n" + i;
            c.add(List.of("ip", "netns", "add", ns));
            c.add(List.of("ip", "-n", ns, "link", "set", "lo", "up"));
            c.add(List.of("ip", "-n", br, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns));
            c.add(List.of("ip", "-n", br, "link", "set", port, "master", "br0"));
            c.add(List.of("ip", "-n", br, "link", "set", port, "up"));
            c.add(List.of("ip", "-n", ns, "addr", "add", address(i) + "/24", "dev", "eth0"));
            c.add(List.of("ip", "-n", ns, "link", "set", "eth0", "up"));
            c.add(tbf(ns, "eth0"));
            c.add(tbf(br, port));
        }
        return c;
    }

    private List<String> tbf(String ns, String dev) {
        List<String> c = new ArrayList<>(
                List.of("tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate.text()));
        c.addAll(TBF);
        return c;
    }

    /** The commands that remove the cluster: the namespaces, with the veths and the bridge in them. */
    public List<List<String>> teardown() {
        List<List<String>> c = new ArrayList<>();
        for (int i = 0; i < nodes; i++) {
            c.add(List.of("ip", "netns", "del", namespace(i)));
        }
        c.add(List.of("ip", "netns", "del", bridgeNamespace()));
        return c;
    }

    /** {@code command} run inside node {@code i}'s namespace. */
    public List<String> exec(int i, List<String> command) {
        List<String> c = new ArrayList<>(List.of("ip", "netns", "exec", namespace(i)));
        c.addAll(command);
        return c;
    }

    /** The command that prints node {@code i}'s {@code eth0} counters as JSON ({@code stats64.tx.bytes}). */
    public List<String> counters(int i) {
        return List.of("ip", "-n", namespace(i), "-j", "-s", "link", "show", "dev", "eth0");
    }

    /**
     * The namespaces named in {@code ip netns list}'s output that start with {@code prefix}: an earlier run's
     * leftovers.
     */
    public static List<String> leftovers(String prefix, String netnsList) {
        List<String> out = new ArrayList<>();
        for (String line : netnsList.split("\n")) {
            String name = line.strip().split("\\s+", 2)[0];
            if (name.startsWith(prefix) && name.length() > prefix.length()) {
                out.add(name);
            }
        }
        return out;
    }
}
