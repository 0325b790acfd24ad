package io.viper.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * Every command's {@code --help} renders cleanly: picocli formats descriptions with {@code String.format}, so a bare
 * {@code %} in one makes it print warnings and the raw text; and the summary a command gets in its parent's list, the
 * first line of its description, is a whole sentence.
 */
class HelpTextTest {
    @Test
    void everyCommandsHelpRendersWithoutPicocliWarnings() {
        List<String> problems = new ArrayList<>();
        List<String> seen = new ArrayList<>();
        PrintStream stderr = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            walk(new CommandLine(new ViperMain()), problems, seen, captured);
        } finally {
            System.setErr(stderr);
        }
        assertTrue(seen.size() > 10, "the walk reached the subcommands: " + seen);
        assertEquals(List.of(), problems);
    }

    /**
     * {@code --help} and {@code -h} print the usage and exit 0 for every command, whatever it requires: picocli leaves
     * out the whole standard help mixin of a command that declares one of its names itself (export's
     * {@code --version}), and then {@code --help} fails on the missing required options.
     */
    @Test
    void everyCommandsHelpFlagPrintsItsUsage() {
        List<String> problems = new ArrayList<>();
        List<String> seen = new ArrayList<>();
        walk(new CommandLine(new ViperMain()), problems, seen, new ByteArrayOutputStream());
        for (String name : seen) {
            for (String flag : List.of("--help", "-h")) {
                List<String> words = Arrays.asList(name.split(" "));
                List<String> args = new ArrayList<>(words.subList(1, words.size()));
                args.add(flag);
                StringWriter out = new StringWriter();
                StringWriter err = new StringWriter();
                int exit = ViperMain.execute(
                        args.toArray(String[]::new), new PrintWriter(out, true), new PrintWriter(err, true));
                if (exit != 0
                        || !out.toString().contains("Usage: " + name)
                        || !err.toString().isEmpty()) {
                    problems.add(name + " " + flag + ": exit " + exit + ", "
                            + err.toString().strip());
                }
            }
        }
        assertEquals(List.of(), problems);
    }

    private static void walk(CommandLine cl, List<String> problems, List<String> seen, ByteArrayOutputStream captured) {
        String name = cl.getCommandSpec().qualifiedName();
        seen.add(name);
        captured.reset();
        String usage = cl.getUsageMessage(CommandLine.Help.Ansi.OFF);
        String warnings = captured.toString(StandardCharsets.UTF_8);
        if (!warnings.isEmpty()) {
            problems.add(name + ": " + warnings.lines().findFirst().orElse(""));
        }
        if (usage.contains("%n")) {
            problems.add(name + ": an unformatted %n in the help");
        }
        // The parent's list of commands shows only the first line of each description.
        String[] description = cl.getCommandSpec().usageMessage().description();
        if (description.length == 0 || !description[0].strip().endsWith(".")) {
            problems.add(
                    name + ": the first line of the description, the summary in the command list, is not a sentence: "
                            + (description.length == 0 ? "(none)" : description[0]));
        }
        for (CommandLine sub : cl.getSubcommands().values()) {
            if (sub.getCommandSpec().qualifiedName().equals(name)) {
                continue; // an alias of this command
            }
            walk(sub, problems, seen, captured);
        }
    }
}
