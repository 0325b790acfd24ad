package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@code viper bench fleet} refuses bad flags with one line and exit code 2, before it makes a namespace or starts a
 * process.
 */
class BenchFleetCommandTest {
    private static void refused(String expected, String... flags) {
        String[] args = new String[flags.length + 2];
        args[0] = "bench";
        args[1] = "fleet";
        System.arraycopy(flags, 0, args, 2, flags.length);
        BenchCommandTest.refused(expected, args);
    }

    @Test
    void consumersAreFleetSizesFromOneToTheMostGrowing() {
        refused("--consumers 0: 0 must be from 1 to 64", "--consumers", "0");
        refused("--consumers 65: 65 must be from 1 to 64", "--consumers", "65");
        refused("--consumers 1,-4: -4 must be from 1 to 64", "--consumers", "1,-4");
        refused("--consumers 4,2: fleet sizes must grow from left to right", "--consumers", "4,2");
        refused("--consumers 1,1: fleet sizes must grow from left to right", "--consumers", "1,1");
        refused("--consumers 1,,4: '' is not a number of consumers", "--consumers", "1,,4");
        refused("--consumers eight: 'eight' is not a number of consumers", "--consumers", "eight");
        assertEquals(List.of(1, 4, 8, 16), BenchFleetCommand.fleets("1, 4,8,16"));
    }

    @Test
    void linkRateIsWrittenAsTcWritesIt() {
        refused("--link-rate 500: not a rate (write it as tc does: 500mbit, 1gbit, 200kbit)", "--link-rate", "500");
        refused("--link-rate fast: not a rate", "--link-rate", "fast");
        refused("--link-rate 500mbps: not a rate", "--link-rate", "500mbps");
        refused("--link-rate 1.5gbit: not a rate", "--link-rate", "1.5gbit");
        refused("--link-rate 0mbit: must be from 1mbit to 100gbit", "--link-rate", "0mbit");
        refused("--link-rate 999kbit: must be from 1mbit to 100gbit", "--link-rate", "999kbit");
        refused("--link-rate 101gbit: must be from 1mbit to 100gbit", "--link-rate", "101gbit");
        refused("--link-rate 99999999999999gbit: not a rate", "--link-rate", "99999999999999gbit");
    }

    @Test
    void sizeShareAndPlotAreChecked() {
        refused("--size 512k is too small (at least 1m)", "--size", "512k");
        refused("--size: 'lots' is not a byte size", "--size", "lots");
        refused("--changed 0%: must be above 0% and at most 100%", "--changed", "0%");
        refused("--changed some: not a share (write 2% or 0.02)", "--changed", "some");
        refused("--plot fleet.jpg: the file name must end in .png or .svg", "--plot", "fleet.jpg");
        refused("--size 1t: the bench needs about", "--size", "1t", "--consumers", "2");
    }
}
