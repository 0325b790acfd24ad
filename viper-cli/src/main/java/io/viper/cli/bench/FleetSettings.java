package io.viper.cli.bench;

import java.nio.file.Path;
import java.util.List;
import java.util.OptionalDouble;
import java.util.function.Consumer;

/**
 * What {@code viper bench fleet} measures, checked by the command before it starts anything. Immutable.
 *
 * @param topologies who reads from whom, each measured over every fleet size, in this order
 * @param consumers fleet sizes, smallest first
 * @param sizeBytes the model
 * @param rate every node's link, both ways (where it can be capped)
 * @param changed with a value, a second version where only that share of blocks changed
 * @param dir where the model files, secrets, logs and the consumers' copies go
 * @param progress takes a line of progress (stderr, or nothing with --json)
 * @param killRelay in the relayed fleets of more than two consumers, SIGKILL one relay mid-transfer (the middle node)
 */
public record FleetSettings(
        List<Topology> topologies,
        List<Integer> consumers,
        long sizeBytes,
        LinkRate rate,
        OptionalDouble changed,
        Path dir,
        Consumer<String> progress,
        boolean killRelay) {
    /** Without killing a relay. */
    public FleetSettings(
            List<Topology> topologies,
            List<Integer> consumers,
            long sizeBytes,
            LinkRate rate,
            OptionalDouble changed,
            Path dir,
            Consumer<String> progress) {
        this(topologies, consumers, sizeBytes, rate, changed, dir, progress, false);
    }

    /**
     * The most consumers one run takes: one /24 of addresses, and far beyond what one machine's cores run at link rate.
     */
    public static final int MAX_CONSUMERS = 64;

    /**
     * Who reads from whom: the star, every consumer reading every byte from the producer, or the relayed fleet, where
     * consumers serve what they verified ({@code viper consume --relay}) and the producer's tracker hands each one a
     * source. Another shape is another constant here, with what its consumers are told in {@link FleetBench}'s consumer
     * command.
     */
    public enum Topology {
        STAR("star", "every consumer reads from the producer"),
        RELAY("relay", "consumers relay the blocks they verified; the producer's tracker hands each a source");

        private final String label;
        private final String what;

        Topology(String label, String what) {
            this.label = label;
            this.what = what;
        }

        /** Its name in the table and the JSON. */
        public String label() {
            return label;
        }

        /** What it is, in words. */
        public String what() {
            return what;
        }
    }

    /** The largest fleet. */
    public int largest() {
        return consumers.getLast();
    }
}
