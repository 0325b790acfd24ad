package io.viper.cli;

import io.viper.cli.bench.FleetBench;
import io.viper.cli.bench.FleetReport;
import io.viper.cli.bench.FleetSettings;
import io.viper.cli.bench.LinkRate;
import io.viper.config.ConfigValues;
import io.viper.errors.ViperConfigException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalDouble;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code viper bench fleet}: one producer and N consumers, each a process on a node of a simulated cluster
 * ({@link FleetBench}); per fleet the time until the last consumer swapped, against the bound of the links.
 */
@Command(
        name = "fleet",
        mixinStandardHelpOptions = true,
        description = {
            "Update latency of a fleet: a producer and N consumers, each a viper process on a node of a simulated"
                    + " cluster.",
            "With root and ip netns: a network namespace per node on a bridge, every link capped both ways with tc tbf"
                    + " at --link-rate; elsewhere processes on loopback, links not capped (the output says so).",
            "Per consumer its latency, bytes moved and reused, path, and whether what it swapped in is the published"
                    + " model byte for byte."
        })
final class BenchFleetCommand implements Callable<Integer> {
    @Option(
            names = "--consumers",
            paramLabel = "N[,N...]",
            defaultValue = "4",
            description = "Consumers, or fleet sizes to sweep smallest first (e.g. 1,4,8; at most "
                    + FleetSettings.MAX_CONSUMERS + "; default: ${DEFAULT-VALUE})")
    String consumers;

    @Option(
            names = "--size",
            paramLabel = "SIZE",
            defaultValue = "128m",
            description = "Model size (at least 1m; default: ${DEFAULT-VALUE})")
    String size;

    @Option(
            names = "--link-rate",
            paramLabel = "RATE",
            defaultValue = "500mbit",
            description =
                    "Every node's link, both ways, as tc writes it (500mbit, 1gbit; from 1mbit to 100gbit; default:"
                            + " ${DEFAULT-VALUE})")
    String linkRate;

    @Option(
            names = "--changed",
            paramLabel = "PERCENT",
            description = "Then a second version where only this share of the blocks changed (e.g. 2%%): the bytes each"
                    + " consumer moves for a delta")
    String changed;

    @Option(
            names = "--dir",
            paramLabel = "DIR",
            description =
                    "Where the model files, secrets and processes' logs go (default: a temporary directory, removed"
                            + " after)")
    Path dir;

    @Option(
            names = "--relay",
            paramLabel = "on|off|both",
            defaultValue = "both",
            description = "Consumers relay the blocks they verified (on), all read from the producer (off: the star),"
                    + " or both side by side in the same run (default: ${DEFAULT-VALUE})")
    String relay;

    @Option(
            names = "--kill-relay",
            description = "In each relayed fleet of 3 or more, SIGKILL one relay (the middle node) mid-transfer: the"
                    + " others must still swap in the version")
    boolean killRelay;

    @Option(names = "--json", description = "Print one JSON object (every consumer's figures) instead of the tables")
    boolean json;

    @Option(
            names = "--plot",
            paramLabel = "FILE",
            description = "Also draw the last swap against the number of consumers into FILE (.png or .svg)")
    Path plot;

    @Option(
            names = {"-v", "--verbose"},
            description = "Log what Viper does on stderr")
    boolean verbose;

    @Override
    public Integer call() throws Exception {
        CliLogging.configure(verbose);
        List<Integer> fleets = fleets(consumers);
        long bytes = BenchCommand.named("--size", () -> ConfigValues.parseSize(size));
        if (bytes < (1 << 20)) {
            throw new ViperConfigException("--size " + size + " is too small (at least 1m)");
        }
        LinkRate rate = LinkRate.parse("--link-rate", linkRate);
        List<FleetSettings.Topology> topologies = switch (relay) {
            case "on" -> List.of(FleetSettings.Topology.RELAY);
            case "off" -> List.of(FleetSettings.Topology.STAR);
            case "both" -> List.of(FleetSettings.Topology.STAR, FleetSettings.Topology.RELAY);
            default -> throw new ViperConfigException("--relay " + relay + ": expected on, off or both");
        };
        if (killRelay && relay.equals("off")) {
            throw new ViperConfigException("--kill-relay needs relays: --relay on or both");
        }
        OptionalDouble share = changed == null
                ? OptionalDouble.empty()
                : OptionalDouble.of(BenchCommand.parsePercent("--changed", changed));
        // the bench's copy of the model, the producer's file and staging, and each consumer's two receive buffers and
        // its copy
        BenchCommand.checkMemory(
                "--size", bytes, 4 + 3 * fleets.getLast(), "the producer's copies and three per consumer");
        if (plot != null) {
            ChartFiles.checkPath(plot);
        }
        Path root = dir != null ? BenchCommand.checkDir(dir) : Files.createTempDirectory("viper-bench-fleet");
        FleetBench.Result result;
        try {
            result = new FleetBench(new FleetSettings(
                            topologies,
                            fleets,
                            bytes,
                            rate,
                            share,
                            root,
                            line -> {
                                if (!json) {
                                    System.err.println(line);
                                }
                            },
                            killRelay))
                    .run();
        } finally {
            if (dir == null) {
                BenchCommand.deleteTree(root);
            }
        }
        if (json) {
            System.out.println(FleetReport.json(result));
        } else {
            FleetReport.printTable(result, System.out);
        }
        if (plot != null) {
            FleetPlot.write(plot, result);
        }
        boolean identical = result.rounds().stream().allMatch(FleetBench.Round::allIdentical);
        if (!identical) {
            System.err.println(
                    "viper: a consumer swapped in tensors that differ from the published ones (the identical column)");
        }
        return identical ? 0 : ViperMain.EXIT_FAILURE;
    }

    /** {@code --consumers}: sizes from 1 to {@link FleetSettings#MAX_CONSUMERS}, growing from left to right. */
    static List<Integer> fleets(String value) {
        List<Integer> out = new ArrayList<>();
        for (String s : value.split(",", -1)) {
            int n;
            try {
                n = Integer.parseInt(s.strip());
            } catch (NumberFormatException e) {
                throw new ViperConfigException(
                        "--consumers " + value + ": '" + s.strip() + "' is not a number of consumers");
            }
            if (n < 1 || n > FleetSettings.MAX_CONSUMERS) {
                throw new ViperConfigException(
                        "--consumers " + value + ": " + n + " must be from 1 to " + FleetSettings.MAX_CONSUMERS);
            }
            if (!out.isEmpty() && n <= out.getLast()) {
                throw new ViperConfigException("--consumers " + value + ": fleet sizes must grow from left to right");
            }
            out.add(n);
        }
        return out;
    }
}
