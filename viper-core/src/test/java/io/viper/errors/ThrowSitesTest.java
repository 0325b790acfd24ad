package io.viper.errors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Reads the main sources of every module: an exception built with a reason must be of the type that reason is thrown as
 * ({@link ViperException#of}), so that no throw site contradicts the model, e.g. {@code new
 * ViperException(Reason.CONFIG, ...)} that {@code catch (ViperConfigException)} misses.
 */
class ThrowSitesTest {
    /** {@code new ViperException(} or {@code new RetriableViperException(}, and its first argument. */
    private static final Pattern CONSTRUCTION = Pattern.compile(
            "new\\s+(?:io\\.viper\\.errors\\.)?(ViperException|RetriableViperException)\\s*\\(\\s*([^,]*),");

    private static final Pattern REASON_CONSTANT =
            Pattern.compile("(?:(?:io\\.viper\\.errors\\.)?ViperException\\.)?Reason\\.([A-Z_]+)");

    /**
     * Sites left on purpose, by file and count; the test fails when a count no longer matches, so that an entry goes
     * once its file is fixed. None today.
     */
    private static final Map<String, Integer> KNOWN = Map.of();

    @Test
    void everyExceptionBuiltWithAReasonIsOfThatReasonsType() throws IOException {
        Path root = repositoryRoot();
        List<String> violations = new ArrayList<>();
        Map<String, Integer> known = new TreeMap<>();
        int sites = 0;
        for (Path file : mainSources(root)) {
            String rel = root.relativize(file).toString().replace('\\', '/');
            if (rel.startsWith("viper-core/src/main/java/io/viper/errors/")) {
                continue; // the factory and the subtypes themselves
            }
            String text = Files.readString(file);
            Matcher m = CONSTRUCTION.matcher(text);
            while (m.find()) {
                sites++;
                String problem = problem(m.group(1), m.group(2).strip());
                if (problem != null) {
                    if (KNOWN.containsKey(rel)) {
                        known.merge(rel, 1, Integer::sum);
                    } else {
                        violations.add(rel + ":" + line(text, m.start()) + ": " + problem);
                    }
                }
            }
        }
        assertTrue(sites > 50, "the scan found the throw sites (" + sites + ") under " + root);
        assertEquals(List.of(), violations, "throw sites that contradict their reason");
        assertEquals(new TreeMap<>(KNOWN), known, "known exceptions: drop an entry once its file is fixed");
    }

    /** Why building {@code type} with {@code firstArgument} contradicts the model, or null when it does not. */
    private static String problem(String type, String firstArgument) {
        Matcher r = REASON_CONSTANT.matcher(firstArgument);
        if (!r.matches()) {
            return "new " + type + "(" + firstArgument
                    + ", ...): a reason that is not a constant goes through ViperException.of";
        }
        ViperException.Reason reason = ViperException.Reason.valueOf(r.group(1));
        String expected = ViperException.of(reason, "").getClass().getSimpleName();
        return expected.equals(type)
                ? null
                : "new " + type + "(Reason." + reason + ", ...): " + reason + " is thrown as " + expected;
    }

    private static int line(String text, int offset) {
        return (int) text.substring(0, offset).chars().filter(c -> c == '\n').count() + 1;
    }

    private static List<Path> mainSources(Path root) throws IOException {
        try (Stream<Path> all = Files.walk(root)) {
            return all.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> p.toString().replace('\\', '/').contains("/src/main/java/"))
                    .filter(p -> !root.relativize(p)
                            .toString()
                            .replace('\\', '/')
                            .matches("(.*/)?(target|\\.git|node_modules)/.*"))
                    .sorted()
                    .toList();
        }
    }

    /** The directory with the reactor's pom.xml: tests run in viper-core, one level below. */
    private static Path repositoryRoot() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("mvnw")) && Files.isDirectory(p.resolve("viper-core"))) {
                return p;
            }
        }
        throw new UncheckedIOException(
                new IOException("no repository root above " + Path.of("").toAbsolutePath()));
    }
}
