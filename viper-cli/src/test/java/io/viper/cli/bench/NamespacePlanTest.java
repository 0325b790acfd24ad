package io.viper.cli.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.viper.tensor.DType;
import io.viper.tensor.Tensor;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The commands that make and remove {@code viper bench fleet}'s cluster, checked without running them. */
class NamespacePlanTest {
    private static final NamespacePlan PLAN = new NamespacePlan("vpf-", 3, LinkRate.parse("--link-rate", "500mbit"));

    @Test
    void theBridgeLivesInANamespaceOfItsOwnAndEveryNodeHasAVethOnIt() {
        List<List<String>> setup = PLAN.setup();
        assertEquals(
                List.of(
                        List.of("ip", "netns", "add", "vpf-br"),
                        List.of("ip", "-n", "vpf-br", "link", "set", "lo", "up"),
                        List.of("ip", "-n", "vpf-br", "link", "add", "br0", "type", "bridge"),
                        List.of("ip", "-n", "vpf-br", "link", "set", "br0", "up"),
                        List.of("ip", "netns", "add", "vpf-n0"),
                        List.of("ip", "-n", "vpf-n0", "link", "set", "lo", "up"),
                        List.of(
                                "ip", "-n", "vpf-br", "link", "add", "n0", "type", "veth", "peer", "name", "eth0",
                                "netns", "vpf-n0"),
                        List.of("ip", "-n", "vpf-br", "link", "set", "n0", "master", "br0"),
                        List.of("ip", "-n", "vpf-br", "link", "set", "n0", "up"),
                        List.of("ip", "-n", "vpf-n0", "addr", "add", "10.77.0.1/24", "dev", "eth0"),
                        List.of("ip", "-n", "vpf-n0", "link", "set", "eth0", "up"),
                        List.of(
                                "tc", "-n", "vpf-n0", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "500mbit",
                                "burst", "512kb", "latency", "100ms"),
                        List.of(
                                "tc", "-n", "vpf-br", "qdisc", "add", "dev", "n0", "root", "tbf", "rate", "500mbit",
                                "burst", "512kb", "latency", "100ms")),
                setup.subList(0, 13));
        assertEquals(4 + 3 * 9, setup.size(), "nine commands per node");
        assertEquals(
                List.of("10.77.0.1", "10.77.0.2", "10.77.0.3"),
                List.of(PLAN.address(0), PLAN.address(1), PLAN.address(2)));
    }

    @Test
    void everyCommandActsInsideTheBenchsNamespacesNeverOnTheHostsInterfaces() {
        for (List<String> c : PLAN.setup()) {
            boolean namespaceMade = c.subList(0, 3).equals(List.of("ip", "netns", "add"))
                    && c.get(3).startsWith("vpf-");
            boolean inside = c.get(1).equals("-n") && c.get(2).startsWith("vpf-");
            assertTrue(namespaceMade || inside, "outside the bench's namespaces: " + c);
        }
    }

    @Test
    void eachLinkIsCappedBothWays() {
        Set<String> capped = new HashSet<>();
        for (List<String> c : PLAN.setup()) {
            if (c.getFirst().equals("tc")) {
                assertEquals("500mbit", c.get(c.indexOf("rate") + 1));
                capped.add(c.get(2) + ":" + c.get(6));
            }
        }
        assertEquals(
                Set.of("vpf-n0:eth0", "vpf-br:n0", "vpf-n1:eth0", "vpf-br:n1", "vpf-n2:eth0", "vpf-br:n2"),
                capped,
                "what each node sends (its eth0) and receives (its bridge port)");
    }

    @Test
    void teardownRemovesEveryNamespaceItMade() {
        assertEquals(
                List.of(
                        List.of("ip", "netns", "del", "vpf-n0"),
                        List.of("ip", "netns", "del", "vpf-n1"),
                        List.of("ip", "netns", "del", "vpf-n2"),
                        List.of("ip", "netns", "del", "vpf-br")),
                PLAN.teardown());
        Set<String> made = new HashSet<>();
        PLAN.setup().stream()
                .filter(c -> c.subList(0, 3).equals(List.of("ip", "netns", "add")))
                .forEach(c -> made.add(c.get(3)));
        Set<String> removed = new HashSet<>();
        PLAN.teardown().forEach(c -> removed.add(c.getLast()));
        assertEquals(made, removed);
    }

    @Test
    void processesRunInsideTheirNodesNamespace() {
        assertEquals(
                List.of("ip", "netns", "exec", "vpf-n2", "java", "-version"),
                PLAN.exec(2, List.of("java", "-version")));
        assertEquals(List.of("ip", "-n", "vpf-n0", "-j", "-s", "link", "show", "dev", "eth0"), PLAN.counters(0));
    }

    @Test
    void leftoversAreTheNamespacesWithThePrefix() {
        String list = "vpf-n1 (id: 3)\nother\nvpf-br (id: 1)\nvpf-\ncni-1234 (id: 0)\n\n";
        assertEquals(List.of("vpf-n1", "vpf-br"), NamespacePlan.leftovers("vpf-", list));
        assertEquals(List.of(), NamespacePlan.leftovers("vpf-", ""));
    }

    @Test
    void aPlanHasAProducerAndAConsumerAtLeastAndFitsOneSubnet() {
        LinkRate r = LinkRate.parse("--link-rate", "1gbit");
        assertThrows(IllegalArgumentException.class, () -> new NamespacePlan("vpf-", 1, r));
        assertThrows(IllegalArgumentException.class, () -> new NamespacePlan("vpf-", 255, r));
        assertEquals("10.77.0.254", new NamespacePlan("vpf-", 254, r).address(253));
    }

    @Test
    void linkRatesAreTcsUnits() {
        assertEquals(500_000_000L, LinkRate.parse("--link-rate", "500MBit").bitsPerSecond());
        assertEquals("500mbit", LinkRate.parse("--link-rate", " 500MBit ").text());
        assertEquals(2_000_000L, LinkRate.parse("--link-rate", "2000kbit").bitsPerSecond());
        assertEquals(5_000_000L, LinkRate.parse("--link-rate", "5000000bit").bitsPerSecond());
        // 128 MiB at 500 Mbit/s, the bound for one copy: 2.15 s
        assertEquals(2147.5, LinkRate.parse("--link-rate", "500mbit").ms(128 << 20), 0.1);
    }

    @Test
    void aDeltasNewBytesAreTheBlocksThatDiffer() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment a = arena.allocate(10 << 10);
            MemorySegment b = arena.allocate(10 << 10);
            b.set(ValueLayout.JAVA_BYTE, 5000, (byte) 1); // block 1 of 4k blocks
            b.set(ValueLayout.JAVA_BYTE, 9000, (byte) 1); // the last block, 2k long
            List<Tensor> before = List.of(Tensor.of("t", DType.U8, new long[] {a.byteSize()}, a));
            List<Tensor> after = List.of(Tensor.of("t", DType.U8, new long[] {b.byteSize()}, b));
            assertEquals(4096 + 2048, FleetBench.newBytes(before, after, 4096));
            assertEquals(0, FleetBench.newBytes(before, before, 4096));
        }
    }
}
